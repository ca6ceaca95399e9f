/*
 * capture_parsers: one row per workload capture, beside its row in
 * capture/capture_registry.c (docs/architecture.md#a-new-workload).
 */
#include "cli/capture_parsers.h"

#include <string.h>

#include "capture/capture_registry.h"
#include "cli/cli_opt.h"

/* What each cli/cmd_capture_<name>.c defines: its verb and its grammar. */
int cmd_capture_disc(int argc, char **argv);
extern const struct cli_spec cmd_capture_disc_spec;
int cmd_capture_kura(int argc, char **argv);
extern const struct cli_spec cmd_capture_kura_spec;
int cmd_capture_salca(int argc, char **argv);
extern const struct cli_spec cmd_capture_salca_spec;
int cmd_capture_test(int argc, char **argv);
extern const struct cli_spec cmd_capture_test_spec;

/* In the registry's order, so a reader sees the two tables side by side. */
static const struct capture_parser parsers[] = {
    {"disc", cmd_capture_disc, &cmd_capture_disc_spec},
    {"kura", cmd_capture_kura, &cmd_capture_kura_spec},
    {"salca", cmd_capture_salca, &cmd_capture_salca_spec},
    {"test", cmd_capture_test, &cmd_capture_test_spec},
};

#define N_PARSERS (sizeof parsers / sizeof parsers[0])

const struct capture_parser *capture_parser_find(const char *name)
{
    for (size_t i = 0; name && i < N_PARSERS; i++)
        if (!strcmp(parsers[i].name, name))
            return &parsers[i];
    return NULL;
}

int capture_parsers_check(struct errmsg *e)
{
    for (size_t i = 0; i < capture_registry_count(); i++) {
        const char *name = capture_registry_get(i)->name;
        if (!capture_parser_find(name))
            return errmsg_set(e, ERR_INTERNAL,
                              "capture '%s' is registered (capture/capture_registry.c) but has "
                              "no option parser (cli/capture_parsers.c)",
                              name);
    }
    for (size_t i = 0; i < N_PARSERS; i++)
        if (!capture_registry_find(parsers[i].name))
            return errmsg_set(e, ERR_INTERNAL,
                              "capture option parser '%s' (cli/capture_parsers.c) has no "
                              "registered capture (capture/capture_registry.c)",
                              parsers[i].name);
    return 0;
}
