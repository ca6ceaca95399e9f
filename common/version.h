/*
 * version: the one version of acceltrace. `acceltrace --version`, the results tables and
 * the producer field of every trace header (ACCELTRACE_PRODUCER) take it from here, so a
 * release changes one line.
 */
#ifndef ACCELTRACE_VERSION_H
#define ACCELTRACE_VERSION_H

#define ACCELTRACE_VERSION "0.1.0"

/* TraceHeader.producer of the workload captures: "acceltrace 0.1.0". */
#define ACCELTRACE_PRODUCER "acceltrace " ACCELTRACE_VERSION

/* TraceHeader.producer of the synthetic test traces (capture/synth), kept from their first
 * version so that equal parameters keep giving equal files. */
#define ACCELTRACE_PRODUCER_SYNTH "acceltrace test_trace"

#endif
