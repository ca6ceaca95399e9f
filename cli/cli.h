/*
 * cli: the acceltrace program. One file per verb (cli/cmd_<verb>.c) defining
 * `int cmd_<verb>(int argc, char **argv)` (declared below) and, once its options are
 * table-driven (cli/cli_opt.h), `const struct cli_spec cmd_<verb>_spec`; both are
 * registered in the verb table of cli/main.c. argv[0] is the verb name. A verb returns the
 * process exit status: 0 ok, 1 runtime failure, 2 usage, 3 bad input data (README.md, exit
 * status). Only cli/ prints diagnostics and chooses exit codes.
 */
#ifndef ACCELTRACE_CLI_H
#define ACCELTRACE_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analyzer.h"
#include "common/version.h"

/* Prints "acceltrace: <message>" to stderr with a newline. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "acceltrace: warning: <message>" to stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a usage error for verb and returns exit status 2. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports an error from a module (message + code) and returns err_exit_code(code). */
int cli_fail(int code, const char *msg);

/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);

/*
 * The option every verb that reads a trace for results shares (replay, analyze, export,
 * model): --allow-partial accepts a damaged trace (missing or inconsistent index,
 * traces/trace_reader.h) with a warning on stderr that -q does not hide. True when arg was
 * it; it sets the process-wide reader policy.
 */
bool cli_trace_option(const char *arg);

/* Removes the cli_trace_option options from argv (for dispatchers); returns the new argc. */
int cli_take_trace_options(int argc, char **argv);

/*
 * Number parsing for option values: whole string must parse, else false. cli_parse_f64
 * also refuses non-finite values (nan, inf, and overflow such as 1e999), so callers that
 * name their option in the message refuse them too.
 */
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_u64(const char *s, uint64_t *out);
bool cli_parse_f64(const char *s, double *out);

/*
 * Parses "AxB" (or "AXB") into two integers in [1, max]; false on anything else.
 */
bool cli_parse_shape(const char *s, int max, int *a, int *b);

/* The command line as one string (for trace headers); static storage. */
const char *cli_command_line(void);

/*
 * Writes OUT/manifest.json for the figures or tables a `plot` or `analyze` run wrote there
 * (replay/results.h results_write_output_manifest): kind ("plot", "analyze disc", ...), the
 * command line, the inputs, and the trace and config hashes and data source of the
 * results folder `results_dir` (its manifest.json) or else of the first trace (its
 * header). Either may be NULL. 0, or the exit status of a failure it reported.
 */
int cli_write_output_manifest(const char *kind, const char *out, const char *results_dir,
                              const char *const *traces, size_t n_traces);

/*
 * What the manifest records of the first trace (its content hash and data source), taken
 * in the analyzer pass that reads it (cli_trace_ident_ops, analysis/analyzer.h: run it
 * with the verb's analyzers, zeroed first; it keeps the first trace it sees), so the
 * manifest does not open the trace again. cli_write_output_manifest_id is
 * cli_write_output_manifest with id (when id->set) in place of the first trace's header.
 */
struct cli_trace_ident {
    bool set;
    char hash[128], source[512], detail[1024];
};
extern const struct analyzer_ops cli_trace_ident_ops;
int cli_write_output_manifest_id(const char *kind, const char *out, const char *results_dir,
                                 const char *const *traces, size_t n_traces,
                                 const struct cli_trace_ident *id);

/* Records argv for cli_command_line; called by main() once. */
void cli_set_command_line(int argc, char **argv);

/*
 * Prints j on stdout as one compact JSON document and a newline (--json of every verb)
 * and drops the reference; NULL (an allocation failed while building it) is reported.
 * 0, or the exit status of the failure.
 */
int cli_print_json(json_t *j);

/*
 * The names of the plain files in dir, sorted, as a JSON array of strings (the "files" of a
 * verb's --json that writes a folder); an empty array when dir cannot be read, NULL when
 * memory runs out.
 */
json_t *cli_json_dir_files(const char *dir);

/*
 * The key=value lines of text (len bytes) as one JSON object, in their order (the --json of
 * the verbs that print key=value lines): a value that parses whole as an integer becomes
 * an integer, one that parses as a finite number a real, any other a string; lines
 * without '=' are left out. NULL when memory runs out.
 */
json_t *cli_kv_json(const char *text, size_t len);

/*
 * Runs fn(ctx, f) with f a memory stream, then prints the key=value lines it wrote as one
 * JSON object (cli_kv_json) with extra's members added (extra may be NULL; its reference
 * is taken). fn returns 0 or an exit status; nothing is printed when it fails.
 */
int cli_kv_run_json(int (*fn)(void *ctx, FILE *f), void *ctx, json_t *(*extra)(void *ctx));

/*
 * The trace a capture wrote, for its --json: {"file", "bytes" (its size), "records" (after
 * the header, from the index), "content_hash"}; a member that cannot be read is left out.
 * NULL when memory runs out.
 */
json_t *cli_json_trace_file(const char *path);

/*
 * export tiles' output steps, shared with `model kura --plots --tiles` (one pass over the
 * trace for both; cli/cmd_export_tiles.c). cli_export_tiles_check: the trace may not be one
 * of the files written into dir (0, or exit status 2 after the message, verb named).
 * cli_export_tiles_write: from the step a kura_pick pass found, derives the tile streams
 * of an nh x nw array, compares stored tiles, writes dir and prints the summary line (or
 * the JSON document); 0 or an exit status after the message.
 */
struct kura_pick;
int cli_export_tiles_check(const char *verb, const char *path, const char *dir);
int cli_export_tiles_write(const struct kura_pick *tp, const char *path, const char *dir, int nh,
                           int nw, bool json);

/* The verbs (cli/cmd_<verb>.c). */
int cmd_capture(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_energy(int argc, char **argv);
int cmd_plot(int argc, char **argv);
/* --format/--size of a verb that writes figures (CLI_OPT_PLOT_FORMAT, CLI_OPT_PLOT_SIZE):
 * call with the option's id and argument for each, then once with id 0 after parsing to
 * apply them to every plot of the process. 0 or the usage error's exit status. */
int cli_plot_output_opt(const char *verb, int id, const char *arg);
int cmd_report(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* The grammars of the verbs and sub-verbs (cli/cli_opt.h). */
struct cli_spec;
extern const struct cli_spec cmd_info_spec, cmd_dump_spec, cmd_verify_spec, cmd_recover_spec;
extern const struct cli_spec cmd_replay_spec, cmd_config_spec, cmd_merge_spec, cmd_sweep_spec;
extern const struct cli_spec cmd_energy_spec, cmd_plot_spec, cmd_report_spec, cmd_demo_spec,
    cmd_reproduce_spec;
extern const struct cli_spec cmd_model_kura_spec, cmd_model_salca_spec, cmd_model_gpu_spec;
/* The grammars of the capture workloads are listed in cli/capture_parsers.c. */
extern const struct cli_spec cmd_analyze_hash_spec, cmd_analyze_disc_spec,
    cmd_analyze_conflicts_spec;
extern const struct cli_spec cmd_export_tiles_spec, cmd_export_hbm_spec, cmd_export_timeline_spec;
extern const struct cli_spec cmd_export_scalesim_spec, cmd_export_chakra_spec;
extern const struct cli_spec cmd_import_masks_spec, cmd_import_selections_spec;
extern const struct cli_spec cmd_validate_gpu_spec;

#endif
