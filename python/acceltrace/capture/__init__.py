"""acceltrace.capture: captures in PyTorch on CPU or CUDA (docs/python.md "Torch capture").

    python3 -m acceltrace.capture disc --model micro --weights w.safetensors -o out.atr

disc: the DiSC capture (CTR + ST on the project's PixArt-Sigma-style DiT), writing the
records of `acceltrace capture disc`; salca: the Salca model source on a Llama, the records
of `acceltrace capture salca --source model`. Each is a base.Capture run by
base.run_capture (the interface of capture/capture.h). Needs torch (Debian's
python3-torch) besides the package's own dependencies.
"""

#: the torch captures, one line each: name -> (module, class) of a base.Capture subclass,
#: imported when used (they need torch)
CAPTURES = {
    "disc": ("disc", "DiscCapture"),
    "salca": ("salca", "SalcaCapture"),
}


def capture_class(name):
    """The Capture subclass of a capture name (KeyError when there is none)."""
    import importlib
    mod, cls = CAPTURES[name]
    return getattr(importlib.import_module("." + mod, __name__), cls)
