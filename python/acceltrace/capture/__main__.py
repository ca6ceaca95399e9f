"""Command line of the torch captures: python3 -m acceltrace.capture disc [options] -o F.

Exit status: 0 done, 2 usage error, 3 bad input data (message naming the file), 1 other
failure. Progress and the summary line go to stderr (-q: none).
"""
import argparse
import json
import os
import sys


def disc_parser():
    p = argparse.ArgumentParser(
        prog="python3 -m acceltrace.capture disc",
        description="DiT denoising with CTR and ST executed for real (DiSC) in PyTorch; "
                    "writes the DiscStep, DiscMask and Summary records of "
                    "`acceltrace capture disc` (docs/python.md).")
    g = p.add_argument_group("model and sampler")
    g.add_argument("--model", default="tiny", help="micro, tiny (default) or pixart-sigma-xl")
    g.add_argument("--image-size", type=int, default=0, metavar="PX")
    g.add_argument("--steps", type=int, default=0, metavar="K")
    g.add_argument("--sampler", choices=["dpm2m", "ddim"], default="dpm2m")
    g.add_argument("--cfg", type=float, default=None, metavar="W",
                   help="classifier-free guidance scale (batch of 2)")
    g.add_argument("--seed", type=int, default=0, help="initial latent seed (default 0)")
    g.add_argument("--weights", action="append", default=None, metavar="W",
                   help="FILE.safetensors (repeat for shards; diffusers or original PixArt "
                        "names) or seed:S (torch's own seeded weights, not the C "
                        "capture's; default seed:0)")
    g.add_argument("--text", default=None, metavar="T",
                   help="seed:S (default seed:1, the C capture's generator), raw float32 or "
                        ".npy (T x D_c)")
    g.add_argument("--null-text", default=None, metavar="FILE")
    g = p.add_argument_group("CTR")
    g.add_argument("--ctr-target", default="0.40", metavar="R")
    g.add_argument("--ctr-tau", type=float, default=None, metavar="X")
    g.add_argument("--ctr-off", action="store_true")
    g = p.add_argument_group("ST")
    g.add_argument("--st-alpha", type=float, default=None, metavar="A")
    g.add_argument("--st-theta", type=float, default=None, metavar="X")
    g.add_argument("--st-target", type=float, default=None, metavar="S",
                   help="per-block alpha reaching sparsity S at step 0")
    g.add_argument("--st-off", action="store_true")
    g.add_argument("--st-refresh", type=int, default=2, metavar="K")
    g.add_argument("--keep-masks", default="none", metavar="SEL")
    g = p.add_argument_group("device and output")
    g.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    g.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="model dtype; scores, softmax and thresholds stay float32")
    g.add_argument("--no-compare-dense", dest="compare_dense", action="store_false")
    g.add_argument("--compare-dense", dest="compare_dense", action="store_true")
    g.add_argument("--threads", type=int, default=0, metavar="N", help="CPU threads")
    g.add_argument("--zstd-level", type=int, default=3, metavar="N")
    g.add_argument("--tie-eps", type=float, default=0.0, metavar="E",
                   help="record threshold ties: probabilities within E*theta of theta, "
                        "CTR distances within E*tau of tau")
    g.add_argument("--ties-out", default=None, metavar="FILE.json",
                   help="write the ties found (needs --tie-eps)")
    g.add_argument("-o", dest="out", required=True, metavar="FILE.atr")
    g.add_argument("-q", dest="quiet", action="store_true")
    p.set_defaults(compare_dense=True)
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m acceltrace.capture disc [options] -o FILE.atr\n"
              "       python3 -m acceltrace.capture disc --help",
              file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] != "disc":
        hint = " (the Salca capture is C only: acceltrace capture salca)" \
            if argv[0] == "salca" else " (disc)"
        print("acceltrace.capture: unknown capture '%s'%s" % (argv[0], hint), file=sys.stderr)
        return 2
    a = disc_parser().parse_args(argv[1:])
    modes = [x for x in (a.ctr_tau is not None, a.ctr_off) if x]
    if len(modes) > 1:
        print("acceltrace.capture: --ctr-tau and --ctr-off exclude each other", file=sys.stderr)
        return 2
    a.ctr = "off" if a.ctr_off else "tau" if a.ctr_tau is not None else "target"
    if a.ctr == "tau" and not a.ctr_tau >= 0:
        print("acceltrace.capture: --ctr-tau must be a finite number >= 0", file=sys.stderr)
        return 2
    if sum(x is not None for x in (a.st_alpha, a.st_theta, a.st_target,
                                   a.st_off or None)) > 1:
        print("acceltrace.capture: --st-alpha, --st-theta, --st-target and --st-off exclude "
              "each other", file=sys.stderr)
        return 2
    a.st = ("off" if a.st_off else "theta" if a.st_theta is not None else
            "target" if a.st_target is not None else "alpha")
    if a.st_alpha is None:
        a.st_alpha = 1.0
    if a.st_theta is None:
        a.st_theta = 0.0
    try:
        import torch
    except ImportError:
        print("acceltrace.capture: torch is not installed (Debian: apt-get install "
              "python3-torch)", file=sys.stderr)
        return 1
    from . import disc
    from .dit_model import ConfigError, WeightError
    from .inputs import InputError
    from ..errors import TraceError
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    try:
        c = disc.DiscCapture(a)
        c.load()
        total = c.K * (1 + (1 if a.compare_dense else 0) +
                       (1 if a.compare_dense and a.ctr != "off" and a.st != "off" else 0))
        done = [0]

        def progress(k):
            done[0] += 1
            if not a.quiet:
                print("\rdisc torch capture: %d/%d steps" % (done[0], total), end="",
                      file=sys.stderr, flush=True)
        res = c.run(a.out, ["python3", "-m", "acceltrace.capture"] + argv, progress)
    except ConfigError as ex:
        print("acceltrace.capture: %s" % ex, file=sys.stderr)
        return 2
    except (WeightError, InputError) as ex:
        print("acceltrace.capture: %s" % ex, file=sys.stderr)
        return 3
    except (TraceError, OSError, RuntimeError, ValueError) as ex:
        print("acceltrace.capture: %s" % ex, file=sys.stderr)
        return 1
    if a.ties_out:
        with open(a.ties_out, "w") as f:
            json.dump(c.ties, f)
    if not a.quiet:
        print("", file=sys.stderr)
        line = "disc torch capture: %s on %s (%s): %.2f s, sparsity %.4f, %d masks" % (
            c.cfg.name, a.device, a.dtype, res["wall_s"], res["sparsity"],
            res["masks_written"])
        if "cosine_main" in res:
            line += ", main vs dense: cosine %.6f" % res["cosine_main"]
        print(line, file=sys.stderr)
        if a.tie_eps > 0:
            print("disc torch capture: ties within %g: %d ST entries, %d CTR tokens" % (
                a.tie_eps, sum(len(v) for v in c.ties["st"].values()),
                sum(len(v) for v in c.ties["ctr"].values())), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
