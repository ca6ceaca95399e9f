"""acceltrace.capture: captures in PyTorch on CPU or CUDA (docs/python.md "Torch capture").

    python3 -m acceltrace.capture disc --model micro --weights w.safetensors -o out.atr

disc: the DiSC capture (CTR + ST on the project's PixArt-Sigma-style DiT), writing the
records of `acceltrace capture disc`. Needs torch (Debian's python3-torch) besides the
package's own dependencies.
"""
