#include "common/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

bool progress_global_quiet;

double progress_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_init(struct progress *p, const char *label, uint64_t total, bool quiet)
{
    p->label = label;
    p->total = total;
    p->done = 0;
    p->done0 = 0;
    p->quiet = quiet || progress_global_quiet;
    p->tty = isatty(STDERR_FILENO);
    p->t_start_s = p->t_last_s = progress_now_s();
    const char *iv = getenv("ACCELTRACE_PROGRESS_INTERVAL");
    char *end = NULL;
    double x = iv ? strtod(iv, &end) : 5.0;
    p->every_s = iv && (end == iv || *end || !(x >= 0) || x > 86400) ? 5.0 : x;
}

void progress_eta_text(const struct progress *p, double now, char *buf, size_t n)
{
    double el = now - p->t_start_s;
    if (!p->total || p->done >= p->total) {
        snprintf(buf, n, "%s", "");
        return;
    }
    if (p->done <= p->done0 || el < 1.0) {
        snprintf(buf, n, " eta ?");
        return;
    }
    /* the rate so far, straight line: work done per second since the start */
    double left = el * (double)(p->total - p->done) / (double)(p->done - p->done0);
    if (left < 60)
        snprintf(buf, n, " eta %.0fs", left);
    else if (left < 3600)
        snprintf(buf, n, " eta %dm%02ds", (int)(left / 60), (int)left % 60);
    else if (left < 1e8)
        snprintf(buf, n, " eta %dh%02dm", (int)(left / 3600), (int)(left / 60) % 60);
    else
        snprintf(buf, n, " eta >3y");
}

static void report(struct progress *p, double now)
{
    double el = now - p->t_start_s;
    char eta[32];
    progress_eta_text(p, now, eta, sizeof eta);
    if (p->tty) {
        int width = 30, fill = 0;
        double frac = p->total ? (double)p->done / (double)p->total : 0.0;
        fill = (int)(frac * width);
        fprintf(stderr, "\r%s [", p->label);
        for (int i = 0; i < width; i++)
            fputc(i < fill ? '#' : '.', stderr);
        /* the trailing spaces clear a longer eta of the previous redraw */
        fprintf(stderr, "] %llu/%llu %.1fs%s   ", (unsigned long long)p->done,
                (unsigned long long)p->total, el, eta);
    } else {
        fprintf(stderr, "%s: %llu/%llu (%.1fs%s)\n", p->label, (unsigned long long)p->done,
                (unsigned long long)p->total, el, eta);
    }
    fflush(stderr);
}

void progress_update(struct progress *p, uint64_t done)
{
    p->done = done;
    if (p->quiet)
        return;
    double now = progress_now_s();
    double every = p->tty ? 0.1 : p->every_s;
    if (now - p->t_last_s >= every) {
        p->t_last_s = now;
        report(p, now);
    }
}

void progress_finish(struct progress *p)
{
    if (p->quiet)
        return;
    if (p->total)
        p->done = p->total;
    report(p, progress_now_s());
    if (p->tty)
        fputc('\n', stderr);
}
