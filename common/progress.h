/*
 * progress: reports long work on stderr. On a TTY it redraws one bar line; otherwise it
 * prints a plain line at most every 5 seconds (ACCELTRACE_PROGRESS_INTERVAL=SECONDS sets
 * the interval; 0 prints every update, for logs that follow each step); quiet mode prints
 * nothing. Every report
 * with a known total ends with an estimate of the time left (progress_eta_text). The reporter
 * only writes stderr, never stdout, so results piped from stdout stay clean.
 */
#ifndef ACCELTRACE_PROGRESS_H
#define ACCELTRACE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct progress {
    const char *label;
    uint64_t total; /* units of work; 0 when unknown */
    uint64_t done;
    uint64_t done0; /* units done before t_start_s (a resumed run): not in the rate */
    bool quiet;
    bool tty;
    double t_start_s; /* monotonic seconds at start */
    double t_last_s;  /* last report */
    double every_s;   /* seconds between plain lines (not a TTY): 5, or the environment's
                       * ACCELTRACE_PROGRESS_INTERVAL (0: a line per update) */
};

/* Starts a report of `total` units; quiet suppresses all output. */
void progress_init(struct progress *p, const char *label, uint64_t total, bool quiet);
/* Sets the units done and reports if enough time passed. */
void progress_update(struct progress *p, uint64_t done);
/* Final line (newline on a TTY bar). */
void progress_finish(struct progress *p);

/*
 * The estimate of the time left that every report ends with, into buf (n bytes): " eta 42s",
 * " eta 3m05s", " eta 2h10m" from the rate so far (elapsed * left / done); " eta ?" before
 * the first unit or the first second; "" when the total is unknown (0) or reached.
 */
void progress_eta_text(const struct progress *p, double now_s, char *buf, size_t n);

/* Monotonic clock in seconds. */
double progress_now_s(void);

/* Process-wide quiet flag set by the CLI's -q; progress_init ORs it in. */
extern bool progress_global_quiet;

#endif
