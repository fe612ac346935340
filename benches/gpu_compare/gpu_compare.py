#!/usr/bin/env python3
"""trine's GPU devices side by side with PyTorch (cuBLAS, cuDNN, its own kernels): issues 33 and 35.

    python3 benches/gpu_compare/gpu_compare.py --bin build/rel/gpu-compare --devices cuda:0,vulkan:0

The cases come from `gpu-compare --list` (one list, in benches/gpu_compare/gpu_compare.cpp). Each
trine device runs in a `gpu-compare --serve` process of its own; PyTorch runs in this one. For every
case the columns take turns sample by sample (PyTorch, then each trine device, the order rotated
each round), and each column's figure is the median of its samples. Inputs are resident on the GPU,
built once per case; a sample is a run of back-to-back calls followed by a wait (for PyTorch,
torch.cuda.synchronize), its time per call. TF32 is off for PyTorch's f32 matmul and convolution
(trine's f32 paths do not use it either); cudnn.benchmark is on (PyTorch at its best).

Prints one markdown table on stdout (progress on stderr) and, with --json, writes every sample.
Without PyTorch or without a CUDA GPU the PyTorch column says why and the trine columns still run.
--budget stops starting new cases after that many seconds; the cases left say so in the table.
"""
import argparse
import datetime
import json
import os
import select
import shlex
import statistics
import subprocess
import sys
import time


def log(msg):
    print(f"[gpu-compare {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_list(text):
    cases = []
    for line in text.splitlines():
        words = line.split()
        fields = dict(w.split("=", 1) for w in words if "=" in w)
        plain = [w for w in words if "=" not in w]
        cases.append({
            "name": plain[0], "op": plain[1], "dtype": plain[2], "dims": [int(d) for d in plain[3:]],
            "causal": fields.get("causal") == "1", "flops": float(fields["flops"]),
            "bytes": float(fields["bytes"]),
        })
    return cases


class TrineColumn:
    """One `gpu-compare --serve` process: one trine device."""

    def __init__(self, binary, device, small, target_ms, timeout_s):
        self.device, self.timeout_s, self.dead = device, timeout_s, None
        cmd = [binary, "--device", device, "--serve", "--target-ms", str(target_ms)] + (["--small"] if small else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        first = self._line(120)
        if first is None or not first.startswith("ready"):
            self.dead = (first or "no answer").replace("unavailable ", "unavailable: ", 1)
            self.close()

    def _line(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return line.strip() if line else None

    def sample(self, case):
        if self.dead:
            return {"status": "unavailable", "why": self.dead}
        self.proc.stdin.write(case["name"] + "\n")
        self.proc.stdin.flush()
        line = self._line(self.timeout_s)
        if line is None:
            rc = self.proc.poll()
            self.dead = (f"no answer within {self.timeout_s} s" if rc is None else
                         f"gpu-compare exited with {rc}: {self.proc.stderr.read()[-300:].strip()}")
            self.close()
            return {"status": "error", "why": self.dead}
        word, _, rest = line.partition(" ")
        if word == "ok":
            seconds, reps = rest.split()
            return {"status": "ok", "seconds": float(seconds), "reps": int(reps)}
        return {"status": word, "why": rest}

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class TorchColumn:
    """PyTorch in this process, on cuda:0."""

    def __init__(self, target_ms):
        self.target_s, self.dead, self.current, self.fn, self.reps = target_ms / 1e3, None, None, None, 1
        try:
            import torch  # noqa: PLC0415 (optional: the trine columns run without it)
        except ImportError as e:
            self.dead = f"PyTorch not installed ({e})"
            return
        if not torch.cuda.is_available():
            self.dead = "PyTorch sees no CUDA GPU"
            return
        self.torch = torch
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
            self.name = f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}"
        except Exception as e:  # noqa: BLE001 (the column says why; the trine columns go on)
            self.dead = f"PyTorch failed to start: {type(e).__name__}: {e}"

    def _make(self, case):
        torch = self.torch
        import torch.nn.functional as F  # noqa: PLC0415
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[case["dtype"]]
        g = torch.Generator(device="cuda").manual_seed(1)

        def rnd(*shape):
            return (torch.rand(*shape, device="cuda", generator=g) * 2 - 1).to(dt)

        d, op = case["dims"], case["op"]
        if op == "matmul":
            a, b = rnd(d[0], d[2]), rnd(d[2], d[1])
            return lambda: a @ b
        if op == "gemv":
            a, x = rnd(d[0], d[1]), rnd(d[1])
            return lambda: torch.mv(a, x)
        if op == "add":
            a, b = rnd(d[0]), rnd(d[0])
            return lambda: a + b
        if op in ("relu", "sync_relu"):
            x = rnd(d[0])
            return lambda: torch.relu(x)
        if op == "gelu":
            x = rnd(d[0])
            return lambda: F.gelu(x)
        if op == "cast":
            x = rnd(d[0])
            return lambda: x.to(torch.float16)
        if op == "softmax":
            x = rnd(d[0], d[1])
            return lambda: torch.softmax(x, -1)
        if op == "layernorm":
            x, w, b = rnd(d[0], d[1]), rnd(d[1]), rnd(d[1])
            return lambda: F.layer_norm(x, (d[1],), w, b, 1e-5)
        if op == "rmsnorm":
            x, w = rnd(d[0], d[1]), rnd(d[1])
            return lambda: F.rms_norm(x, (d[1],), w, 1e-5)
        if op == "sum":
            x = rnd(d[0], d[1])
            return lambda: x.sum(-1)
        if op == "attention":
            q, k, v = (rnd(1, d[0], d[1], d[2]) for _ in range(3))
            return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=case["causal"])
        if op == "conv2d":
            x, w = rnd(d[0], d[1], d[2], d[2]), rnd(d[1], d[1], d[3], d[3])
            return lambda: F.conv2d(x, w, padding=1)
        raise ValueError(f"no PyTorch form for {op}")

    def _run(self, reps, sync_each):
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        held = []  # the results stay alive until the wait, as trine's side holds its futures
        for _ in range(reps):
            held.append(self.fn())
            if sync_each:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / reps

    def sample(self, case):
        if self.dead:
            return {"status": "unavailable", "why": self.dead}
        try:
            sync_each = case["op"] == "sync_relu"
            if self.current != case["name"]:
                self.fn, self.current = None, case["name"]
                self.torch.cuda.empty_cache()
                self.fn = self._make(case)
                first = self.fn()  # warm-up (cudnn.benchmark picks its algorithm here)
                by_memory = max(1, (4 << 30) // max(1, first.numel() * first.element_size()))
                del first
                one = self._run(1, sync_each)
                # as trine's side: a sample of about --target-ms, at most 200 calls and 4 GiB of results
                self.reps = max(1, min(200, by_memory, int(self.target_s / max(one, 1e-7))))
            return {"status": "ok", "seconds": self._run(self.reps, sync_each), "reps": self.reps}
        except Exception as e:  # noqa: BLE001 (the cell says what failed; the other columns go on)
            return {"status": "error", "why": f"{type(e).__name__}: {e}"}


def figure(case, seconds):
    if case["op"] == "sync_relu":
        return seconds * 1e6, "us a call"
    if case["flops"] > 0:
        return case["flops"] / seconds / 1e12, "TFLOP/s"
    return case["bytes"] / seconds / 1e9, "GB/s"


def cell(case, result):
    if result["status"] == "unavailable":
        return "—"
    if result["status"] != "ok":
        why = result.get("why", "")
        return f"{result['status']}: {why[:90]}" if why else result["status"]
    value, _ = figure(case, result["median"])
    return f"{value:.4g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/rel/gpu-compare", help="the gpu-compare binary")
    ap.add_argument("--devices", default="cuda:0,vulkan:0", help="trine devices, comma-separated")
    ap.add_argument("--cases", default="", help="case names, comma-separated (default: all)")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--target-ms", type=float, default=30.0, help="the time one sample should fill")
    ap.add_argument("--budget", type=float, default=0, help="seconds after which no new case starts (0: none)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one trine sample may take")
    ap.add_argument("--small", action="store_true", help="the small sizes (a smoke test)")
    ap.add_argument("--no-torch", action="store_true", help="trine columns only")
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args()

    started = time.monotonic()
    listing = subprocess.run([args.bin, "--list"] + (["--small"] if args.small else []), check=True,
                             capture_output=True, text=True).stdout
    cases = parse_list(listing)
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [w for w in wanted if w not in {c["name"] for c in cases}]
        if unknown:
            sys.exit(f"gpu_compare.py: no case named {', '.join(unknown)} (gpu-compare --list names them)")
        cases = [c for c in cases if c["name"] in wanted]

    torch_col = None
    if not args.no_torch:
        torch_col = TorchColumn(args.target_ms)
        log(torch_col.dead or torch_col.name)
    trine_cols = [TrineColumn(args.bin, d, args.small, args.target_ms, args.timeout) for d in args.devices.split(",")]
    for t in trine_cols:
        log(f"trine {t.device}: {t.dead or 'ready'}")
    columns = ([("PyTorch", torch_col)] if torch_col else []) + [(f"trine {t.device}", t) for t in trine_cols]

    results = {}  # case name -> column name -> {"status", "samples", "median", ...}
    for i, case in enumerate(cases):
        if args.budget and time.monotonic() - started > args.budget:
            log(f"budget of {args.budget:.0f} s spent: {len(cases) - i} cases not run")
            for c in cases[i:]:
                results[c["name"]] = {name: {"status": "not run", "why": "budget spent"} for name, _ in columns}
            break
        log(f"{case['name']} ({i + 1}/{len(cases)})")
        per = {name: {"samples": [], "status": "ok"} for name, _ in columns}
        for s in range(args.samples):
            order = columns[s % len(columns):] + columns[:s % len(columns)]
            for name, col in order:
                if per[name]["status"] != "ok":
                    continue
                r = col.sample(case)
                if r["status"] == "ok":
                    per[name]["samples"].append(r["seconds"])
                    per[name]["reps"] = r["reps"]
                else:
                    per[name].update(status=r["status"], why=r.get("why", ""))
        for name, p in per.items():
            if p["status"] == "ok":
                p["median"] = statistics.median(p["samples"])
        results[case["name"]] = per
    for t in trine_cols:
        t.close()

    # The table: one figure per column, each trine column's ratio to PyTorch beside it.
    command = " ".join(shlex.quote(a) for a in [sys.argv[0]] + sys.argv[1:])
    print(f"GPU comparison, {datetime.date.today().isoformat()}: `{command}`\n")
    if torch_col:
        print(f"PyTorch column: {torch_col.dead or torch_col.name}; TF32 off, cudnn.benchmark on.")
    for t in trine_cols:
        if t.dead and t.dead.startswith("unavailable"):
            print(f"trine {t.device}: {t.dead}")
    print(f"{args.samples} samples a case, interleaved column by column, medians; inputs resident on the device.")
    print("trine's matmul writes f32 whatever its inputs (PyTorch's writes the input dtype); the figure counts")
    print("the same FLOP for both. A ratio is PyTorch's time over trine's: above 1, trine is faster.\n")
    head = ["case", "unit"] + [name for name, _ in columns[:1]]
    for name, _ in columns[1 if torch_col else 0:]:
        head += [name] + (["ratio"] if torch_col else [])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for case in cases:
        per = results.get(case["name"])
        if per is None:
            continue
        _, unit = figure(case, 1.0)
        row = [case["name"], unit]
        base = per["PyTorch"] if torch_col else None
        if torch_col:
            row.append(cell(case, base))
        for name, _ in columns[1 if torch_col else 0:]:
            row.append(cell(case, per[name]))
            if torch_col:
                ok = base["status"] == "ok" and per[name]["status"] == "ok"
                # PyTorch's time / trine's: trine's speed over PyTorch's, the sync call included
                row.append(f"{base['median'] / per[name]['median']:.2f}" if ok else "—")
        print("| " + " | ".join(row) + " |")
    log(f"done in {time.monotonic() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "torch": torch_col.dead or torch_col.name if torch_col else None,
                       "cases": cases, "results": results}, f, indent=1)
    # Exit 1 when a trine column failed outright (not a refusal, not an unavailable device).
    bad = [(c, n) for c, per in results.items() for n, p in per.items()
           if n != "PyTorch" and p["status"] == "error"]
    for c, n in bad:
        log(f"{n} failed on {c}: {results[c][n]['why']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
