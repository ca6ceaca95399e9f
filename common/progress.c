#include "common/progress.h"

#include <stdio.h>
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
    p->quiet = quiet || progress_global_quiet;
    p->tty = isatty(STDERR_FILENO);
    p->t_start_s = p->t_last_s = progress_now_s();
}

static void report(struct progress *p, double now)
{
    double el = now - p->t_start_s;
    if (p->tty) {
        int width = 30, fill = 0;
        double frac = p->total ? (double)p->done / (double)p->total : 0.0;
        fill = (int)(frac * width);
        fprintf(stderr, "\r%s [", p->label);
        for (int i = 0; i < width; i++)
            fputc(i < fill ? '#' : '.', stderr);
        fprintf(stderr, "] %llu/%llu %.1fs", (unsigned long long)p->done,
                (unsigned long long)p->total, el);
    } else {
        fprintf(stderr, "%s: %llu/%llu (%.1fs)\n", p->label, (unsigned long long)p->done,
                (unsigned long long)p->total, el);
    }
    fflush(stderr);
}

void progress_update(struct progress *p, uint64_t done)
{
    p->done = done;
    if (p->quiet)
        return;
    double now = progress_now_s();
    double every = p->tty ? 0.1 : 5.0;
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
