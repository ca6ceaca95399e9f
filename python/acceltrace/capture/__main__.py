"""Command line of the torch captures: python3 -m acceltrace.capture disc|salca [options] -o F.

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
    g.add_argument("--png", default=None, metavar="DIR",
                   help="latent, token-mask and kept attention-mask images (as the C capture)")
    g.add_argument("--mem-limit", default="16GiB", metavar="SIZE",
                   help="refuse to run above this memory estimate (16GiB; 0: none)")
    g.add_argument("--save-weights", default=None, metavar="FILE",
                   help="also write the model weights as F32 safetensors (diffusers names)")
    g.add_argument("--tie-eps", type=float, default=0.0, metavar="E",
                   help="record threshold ties: probabilities within E*theta of theta, "
                        "CTR distances within E*tau of tau")
    g.add_argument("--ties-out", default=None, metavar="FILE.json",
                   help="write the ties found (needs --tie-eps)")
    g.add_argument("-o", dest="out", required=True, metavar="FILE.atr")
    g.add_argument("-q", dest="quiet", action="store_true")
    p.set_defaults(compare_dense=True)
    return p


_UNITS = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "K": 1024.0,
          "M": 1048576.0, "G": 1073741824.0, "T": 1099511627776.0, "KiB": 1024.0,
          "MiB": 1048576.0, "GiB": 1073741824.0, "TiB": 1099511627776.0}


def parse_size(s):
    """mem_parse_size of common/mem.c: '8GiB', '512M', '1e9'; None when malformed."""
    import re
    m = re.fullmatch(r"([0-9][0-9.eE+-]*?)([A-Za-z]*)", s or "")
    if not m or m.group(2) not in _UNITS or re.search("[xXpP]", s):
        return None
    try:
        v = float(m.group(1))
    except ValueError:
        return None
    b = v * _UNITS[m.group(2)]
    return int(b) if 0 <= b < 9223372036854775808.0 else None


def salca_parser():
    p = argparse.ArgumentParser(
        prog="python3 -m acceltrace.capture salca",
        description="Long-context decode with Salca token selection and baselines on the "
                    "project's torch Llama (Hugging Face checkpoints or the C capture's "
                    "seeded tiny model); writes the records of `acceltrace capture salca "
                    "--source model` (docs/python.md).")
    g = p.add_argument_group("source and task")
    g.add_argument("--source", default="model",
                   help="model (the only source in torch; the synthetic generator is C only)")
    g.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="Hugging Face Llama directory (config.json, model.safetensors or "
                        "model.safetensors.index.json); default: the built-in tiny model")
    g.add_argument("--seed", type=int, default=1, help="task and tiny weights seed (1)")
    g.add_argument("--task", default="narrativeqa", help="LongBench task or family")
    g.add_argument("--sample", type=int, default=0)
    g.add_argument("--length", type=int, default=32768,
                   help="prompt tokens exactly (32768); 0 draws a LongBench length")
    g.add_argument("--max-ctx", type=int, default=31500)
    g.add_argument("--max-new", type=int, default=128)
    g.add_argument("--steps", type=int, default=64, help="decode steps (64); -1: the task's N")
    g.add_argument("--tiny-outlier-pairs", type=int, default=4)
    g.add_argument("--tiny-outlier-gain", type=float, default=8.0)
    g = p.add_argument_group("selection")
    g.add_argument("--methods", default="salca,std_topk,pl_topk,full_feat,quest")
    g.add_argument("--retention", default="0.05", metavar="X")
    g.add_argument("--k-min", type=int, default=64)
    g.add_argument("--dynamic", action="store_true")
    g.add_argument("--p-mass", type=float, default=0.95)
    g.add_argument("--pool", type=int, default=5)
    g.add_argument("--threshold-cmp", choices=["ge", "gt"], default="ge")
    g.add_argument("--attn-precision", choices=["int8", "fp32"], default="int8")
    g.add_argument("--quest-page", type=int, default=16)
    g.add_argument("--quest-dense-layers", type=int, default=0)
    g.add_argument("--quest-min-pages", type=int, default=0)
    g = p.add_argument_group("device and output")
    g.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    g.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="model dtype; q, k, v and all of the selection stay float32")
    g.add_argument("--no-hist", action="store_true")
    g.add_argument("--no-top1", dest="top1", action="store_false",
                   help="skip the substituted runs (top-1 agreement)")
    g.add_argument("--threads", type=int, default=0, metavar="N", help="CPU threads")
    g.add_argument("--mem-limit", default="8GiB", metavar="SIZE",
                   help="refuse to start above this memory estimate (8GiB; 0: none)")
    g.add_argument("--zstd-level", type=int, default=3, metavar="N")
    g.add_argument("--tie-eps", type=float, default=0.0, metavar="E",
                   help="record the boundary tokens of every selection: pooled INT8 value "
                        "at T-1 or T (salca, full_feat), score within E*max|score| of the "
                        "K-th (std_topk, pl_topk) or of the last page kept (quest)")
    g.add_argument("--ties-out", default=None, metavar="FILE.json",
                   help="write the boundary tokens per t/l/h/method (needs --tie-eps)")
    g.add_argument("-o", dest="out", required=True, metavar="FILE.atr")
    g.add_argument("-q", dest="quiet", action="store_true")
    return p


def import_torch(threads):
    """torch, its thread count set when threads > 0; None after the message when it is not
    installed (exit 1)."""
    try:
        import torch
    except ImportError:
        print("acceltrace.capture: torch is not installed (Debian: apt-get install "
              "python3-torch)", file=sys.stderr)
        return None
    if threads > 0:
        torch.set_num_threads(threads)
    return torch


def run(c, a, argv, what):
    """run_capture of capture c into a.out under a.mem_limit, with the progress line
    "WHAT torch capture: i/n steps" on stderr unless a.quiet; returns its result."""
    from .base import run_capture

    def progress(done, total):
        if not a.quiet:
            print("\r%s torch capture: %d/%d steps" % (what, done, total), end="",
                  file=sys.stderr, flush=True)
    return run_capture(c, a.out, a.mem_limit, ["python3", "-m", "acceltrace.capture"] + argv,
                       progress, a.zstd_level)


def salca_main(argv):
    a = salca_parser().parse_args(argv[1:])

    def usage(msg):
        print("acceltrace.capture salca: %s" % msg, file=sys.stderr)
        return 2
    if a.source != "model":
        return usage("source '%s' is not available in torch: only the model source is "
                     "ported (the synthetic generator: acceltrace capture salca)" % a.source)
    names = ["salca", "std_topk", "pl_topk", "full_feat", "quest"]
    ms = a.methods.split(",")
    if not ms or any(m not in names for m in ms):
        return usage("bad method list '%s' (salca, std_topk, pl_topk, full_feat, quest)"
                     % a.methods)
    a.methods = [names.index(m) for m in ms]
    if a.steps == 0 or a.steps < -1 or a.steps > 1000000:
        return usage("bad step count %d (1..1000000, or -1 for the task's N)" % a.steps)
    if not 0 <= a.zstd_level <= 19:
        return usage("zstd level must be in [0, 19]")
    if not (0 < a.p_mass <= 1):
        return usage("p-mass must be in (0, 1]")
    if not a.tiny_outlier_gain > 0:
        return usage("tiny-outlier-gain must be positive")
    a.mem_limit = parse_size(a.mem_limit)
    if a.mem_limit is None:
        return usage("bad --mem-limit (a size like 8GiB)")
    torch = import_torch(a.threads)
    if torch is None:
        return 1
    from . import capture_class
    from .base import MemoryLimit, UsageError
    from .llama_model import ConfigError, WeightError
    from ..errors import TraceError
    try:
        c = capture_class("salca")(a)
        run(c, a, argv, "salca")
    except UsageError as ex:
        return usage(ex)
    except MemoryLimit as ex:
        print("acceltrace.capture salca: %s" % ex, file=sys.stderr)
        return 3
    except (ConfigError, WeightError, ValueError) as ex:
        print("acceltrace.capture salca: %s" % ex, file=sys.stderr)
        return 3
    except (TraceError, OSError, RuntimeError) as ex:
        print("acceltrace.capture salca: %s" % ex, file=sys.stderr)
        return 1
    if not a.quiet:
        print("", file=sys.stderr)
    if a.ties_out:
        with open(a.ties_out, "w") as f:
            json.dump(c.ties, f)
    cfg = c.cfg
    print("salca capture: %s, task %s, n0 %d (n_raw %d), %d steps, L %d H %d G %d d %d, "
          "%d selections, %.1f s (torch %s, %s, %s)" % (
              a.checkpoint or "model tiny", c.ti.name, c.n0, c.task.n_raw, c.N, cfg.L, cfg.H,
              cfg.G, cfg.d, c.selects, c.wall, torch.__version__, a.device, a.dtype))
    sys.stdout.write(c.summary["table"])
    for r in c.summary["rows"]:
        if r["top1"] >= 0:
            print("logit_rel_diff.%s=%.3e" % (r["name"], r["logit_diff"]))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m acceltrace.capture disc|salca [options] -o FILE.atr\n"
              "       python3 -m acceltrace.capture disc|salca --help",
              file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    from . import CAPTURES
    if argv[0] not in CAPTURES:
        print("acceltrace.capture: unknown capture '%s' (%s)" % (
            argv[0], " or ".join(sorted(CAPTURES))), file=sys.stderr)
        return 2
    if argv[0] == "salca":
        return salca_main(argv)
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
    a.mem_limit = parse_size(a.mem_limit)
    if a.mem_limit is None:
        print("acceltrace.capture: bad --mem-limit (a size like 16GiB)", file=sys.stderr)
        return 2
    if a.png and not os.path.isdir(a.png):
        print("acceltrace.capture: --png directory '%s' does not exist" % a.png,
              file=sys.stderr)
        return 2
    if a.save_weights and os.path.abspath(a.save_weights) in (
            os.path.abspath(a.out), os.path.abspath(a.out + ".partial")):
        print("acceltrace.capture: --save-weights '%s' is the output trace" % a.save_weights,
              file=sys.stderr)
        return 2
    if a.st_alpha is None:
        a.st_alpha = 1.0
    if a.st_theta is None:
        a.st_theta = 0.0
    if import_torch(a.threads) is None:
        return 1
    from . import capture_class
    from .base import MemoryLimit
    from .dit_model import ConfigError, WeightError
    from .inputs import InputError
    from ..errors import TraceError
    try:
        c = capture_class("disc")(a)
        res = run(c, a, argv, "disc")
    except MemoryLimit as ex:
        print("acceltrace.capture: %s" % ex, file=sys.stderr)
        return 3
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
