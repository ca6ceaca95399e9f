/*
 * cmd_capture: what the `capture WORKLOAD` parsers share: the --resume option and the run
 * of a capture instance under the driver (capture/capture.h) with the resume notices.
 */
#ifndef ACCELTRACE_CMD_CAPTURE_H
#define ACCELTRACE_CMD_CAPTURE_H

#include "capture/capture.h"
#include "cli/cli_opt.h"

/* The --resume row of a capture verb's option table, with the verb's own id. */
#define CMD_CAPTURE_OPT_RESUME(id)                                                                 \
    {                                                                                              \
        id, "resume", 0, CLI_ARG_NONE, NULL,                                                       \
            "continue a killed capture of the same -o FILE and\nparameters from FILE.ckpt "        \
            "(without "                                                                            \
            "one: start\nfresh)",                                                                  \
            0                                                                                      \
    }

/* 0 when ops can resume or resume is false; else the exit status of "capture NAME cannot
 * resume" (2), printed. Call it before ops->open (which may load a model). */
int cmd_capture_resume_check(const struct capture_ops *ops, bool resume);

/*
 * capture_run(ops, inst, out, o, e) after the notice of a resume on stderr (unless
 * o->quiet): "resuming 'OUT' at unit U of its checkpoint" or "no checkpoint 'OUT.ckpt':
 * starting fresh". Returns what capture_run returns.
 */
int cmd_capture_run(const struct capture_ops *ops, void *inst, const char *out,
                    const struct capture_opts *o, struct errmsg *e);

#endif
