"""LongBench-style prompts of docs/salca.md#task-generator, as capture/salca/salca_task.c makes
them (same substreams and draws in the same order, so the same token ids and spans)."""
import bisect
import math

from .inputs import Rng
from .llama_model import rng_below

# name, family, average length, max generation, zh
TASKS = [
    ("narrativeqa", 0, 18409, 128, False), ("qasper", 0, 3619, 128, False),
    ("multifieldqa_en", 0, 4559, 64, False), ("multifieldqa_zh", 0, 6701, 64, True),
    ("hotpotqa", 1, 9151, 32, False), ("2wikimqa", 1, 4887, 32, False),
    ("musique", 1, 11214, 32, False), ("dureader", 1, 15768, 128, True),
    ("gov_report", 2, 8734, 512, False), ("qmsum", 2, 10614, 512, False),
    ("multi_news", 2, 2113, 512, False), ("vcsum", 2, 15380, 512, True),
    ("trec", 3, 5177, 64, False), ("triviaqa", 3, 8209, 32, False),
    ("samsum", 3, 6258, 128, False), ("lsht", 3, 22337, 64, True),
    ("lcc", 4, 1235, 64, False), ("repobench-p", 4, 4206, 64, False),
    ("passage_count", 5, 11141, 32, False), ("passage_retrieval_en", 5, 9289, 32, False),
    ("passage_retrieval_zh", 5, 6745, 32, True), ("passkey", 6, 0, 32, False),
]
FAMILIES = ["single_doc_qa", "multi_doc_qa", "summarization", "few_shot", "code",
            "synthetic", "passkey"]
NEEDLE, DIFFUSE, TEMPLATE, LABEL, COPY, PASSAGE, KEY = range(7)
MAX_RAW = 1 << 26
M32 = 0xFFFFFFFF


class TaskInfo:
    def __init__(self, row):
        self.name, self.family, self.avg_len, self.max_gen, self.zh = row

    def target(self):
        if self.family == 6:
            return 8192.0
        return self.avg_len * (1.0 if self.zh else 1.3)


def find_task(name):
    for row in TASKS:
        if row[0] == name:
            return TaskInfo(row)
    if name in FAMILIES:
        f = FAMILIES.index(name)
        for row in TASKS:
            if row[1] == f:
                return TaskInfo(row)
    return None


class Task:
    """tokens (n0 ids), spans [(start, len, kind, c)], n_raw, n0, n_steps, truncated,
    lost_spans."""


def _uniform_u32(r, lo, hi):
    return lo if hi <= lo else lo + rng_below(r, hi - lo + 1)


class _Gen:
    def __init__(self, n, r, cdf):
        self.n, self.r, self.cdf = n, r, cdf
        self.tok = [0] * n
        self.c = [0.0] * n
        self.spans = []

    def zipf(self):
        u = self.r.uniform()
        return 16 + min(bisect.bisect_right(self.cdf, u), len(self.cdf) - 1)

    def fill(self, a, b):
        for i in range(a, b):
            self.tok[i] = self.zipf()

    def span(self, start, ln, kind, c):
        c = float(_f32(c))
        self.spans.append((start, ln, kind, c))
        for i in range(start, min(start + ln, self.n)):
            self.c[i] = c

    def needle_at(self, a, b, ln):
        depth = 0.05 + 0.9 * self.r.uniform()
        span = ((b - ln) & M32) - a if ((b - ln) & M32) > a else 0
        return a + int(math.floor(depth * span))

    def quote(self, dst, src, ln):
        self.tok[dst] = 3
        for i in range(ln):
            self.tok[dst + 1 + i] = self.tok[src + i]
        return ln + 1


def _f32(x):
    import numpy as np
    return np.float32(x)


def _multi_doc(g, t, cn):
    n, r = g.n, g.r
    k = 4 if t.name == "musique" else 2
    docs = 10
    lens, tail = [], 0
    for _ in range(k):
        lens.append(_uniform_u32(r, 16, 64))
        tail += 1 + lens[-1] // 2
    body = n - tail - 1
    g.fill(1, n)
    order = list(range(docs))
    for a in range(k):
        b = a + rng_below(r, docs - a)
        order[a], order[b] = order[b], order[a]
    for dd in range(1, docs):
        g.tok[1 + body * dd // docs] = 2
    dst = n - tail
    for a in range(k):
        d0 = 1 + body * order[a] // docs + 1
        d1 = 1 + body * (order[a] + 1) // docs
        ln = lens[a]
        if d1 <= d0 + 1:
            continue
        ln = min(ln, d1 - d0)
        s = g.needle_at(d0, d1, ln)
        g.span(s, ln, NEEDLE, cn)
        dst += g.quote(dst, s, lens[a] // 2 if lens[a] // 2 < ln else ln)


def _synthetic(g, t, cn):
    n, r = g.n, g.r
    count = t.name == "passage_count"
    tail = 1 if count else 33
    body = n - tail - 1
    np_, plen = 30, body // 30
    g.fill(1, n)
    if count and plen > 0:
        pool = 10 + rng_below(r, 20)
        txt = [g.zipf() for _ in range(pool * plen)]
        for p in range(np_):
            which = rng_below(r, pool)
            g.tok[1 + p * plen:1 + (p + 1) * plen] = txt[which * plen:(which + 1) * plen]
        for p in range(np_):
            g.span(1 + p * plen, min(plen, 32), PASSAGE, 3.0)
        g.tok[n - 1] = 3
    elif plen > 0:
        target = rng_below(r, np_)
        s, ln = 1 + target * plen, min(plen, 64)
        g.span(s, ln, NEEDLE, cn)
        g.quote(n - tail, s, min(ln, 32))


def _layout(g, t, cn):
    n, r = g.n, g.r
    g.tok[0] = 1
    f = t.family
    if f == 0:
        ln = _uniform_u32(r, 16, 64)
        tail = 1 + ln // 2
        g.fill(1, n)
        s = g.needle_at(1, n - tail, ln)
        g.span(s, ln, NEEDLE, cn)
        g.quote(n - tail, s, ln // 2)
    elif f == 1:
        _multi_doc(g, t, cn)
    elif f == 2:
        g.fill(1, n)
        seg = 1
        while seg + 8 <= n:
            end = min(seg + 256, n)
            s = _uniform_u32(r, seg, end - 8)
            g.span(s, 8, DIFFUSE, 3.0)
            seg += 256
    elif f == 3:
        g.fill(1, n)
        tmpl = [g.zipf() for _ in range(16)]
        n_ex = (n - 1) // 200
        for e in range(n_ex):
            s = 1 + 200 * e
            g.tok[s:s + 16] = tmpl
            g.span(s, 16, TEMPLATE, 2.0)
            if e + 1 < n_ex:
                g.span(s + 192, 8, LABEL, 4.0)
    elif f == 4:
        lines = [[g.zipf() for _ in range(12)] for _ in range(64)]
        for i in range(1, n, 12):
            ln = rng_below(r, 64)
            for b in range(12):
                if i + b < n:
                    g.tok[i + b] = lines[ln][b]
        starts = []
        for _ in range(3):
            while True:
                s = _uniform_u32(r, 1, n - 64)
                if all(not (s < b + 16 and b < s + 16) for b in starts):
                    starts.append(s)
                    break
        for a in range(3):
            g.tok[n - 48 + 16 * a:n - 32 + 16 * a] = g.tok[starts[a]:starts[a] + 16]
            g.span(starts[a], 16, COPY, 6.0)
    elif f == 5:
        _synthetic(g, t, cn)
    elif f == 6:
        sent = [g.zipf() for _ in range(24)]
        tail = 5
        for i in range(1, n):
            g.tok[i] = sent[(i - 1) % 24]
        s = g.needle_at(1, n - tail, 8)
        for i in range(s, s + 8):
            g.tok[i] = g.zipf()
        g.span(s, 8, KEY, 1.25 * cn)
        g.quote(n - tail, s, 4)


_cdf_cache = {}


def _zipf_cdf(vocab):
    if vocab not in _cdf_cache:
        acc, cdf = 0.0, []
        for i in range(vocab - 16):
            acc += math.pow(i + 1.0, -1.1)
            cdf.append(acc)
        _cdf_cache[vocab] = [x / acc for x in cdf]
    return _cdf_cache[vocab]


def generate(t, seed, sample, length, max_len, max_new, vocab, c_needle=24.0):
    """salca_task_generate: the prompt of (task, sample, seed)."""
    if vocab < 64:
        raise ValueError("vocabulary of %d ids is too small for the task generator (needs "
                         ">= 64)" % vocab)
    if length and length < 256:
        raise ValueError("length %d is below the minimum of 256 tokens" % length)
    r = Rng.stream(seed, "task:" + t.name, sample, 0)
    mu = math.log(t.target()) - 0.18
    z = r.normal()
    x = math.floor(math.exp(mu + 0.6 * z) + 0.5)
    n_raw = int(min(max(x, 256), MAX_RAW))
    if length:
        n_raw = length
    g = _Gen(n_raw, r, _zipf_cdf(vocab))
    _layout(g, t, c_needle)
    out = Task()
    out.n_raw = n_raw
    out.n_steps = min(t.max_gen, max_new)
    out.truncated, out.lost_spans = 0, 0
    M = max_len
    if not length and M >= 2 and n_raw > M:
        h = M // 2
        cut = n_raw - 2 * h
        g.tok = g.tok[:h] + g.tok[n_raw - h:]
        kept = []
        for s in g.spans:
            if s[0] + s[1] <= h:
                kept.append(s)
            elif s[0] >= h + cut:
                kept.append((s[0] - cut,) + s[1:])
            else:
                out.lost_spans += 1
        g.spans = kept
        out.truncated = cut
        out.n0 = 2 * h
    else:
        out.n0 = n_raw
    out.tokens = g.tok
    out.spans = g.spans
    return out
