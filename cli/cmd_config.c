/*
 * cmd_config: `acceltrace config show MODEL | check FILE... | list`: the hardware config
 * schemas of the replay models and validation of config files.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/err.h"
#include "formats/csv.h"
#include "replay/model_registry.h"

#define VERB "config"

static void usage(FILE *f)
{
    fputs("usage: acceltrace config show MODEL\n"
          "       acceltrace config check FILE.json...\n"
          "       acceltrace config list\n"
          "\n"
          "show   prints every key of MODEL's hardware config: type, unit, range, default, doc\n"
          "check  validates config files (exit 3 with file, JSON path, line and column on\n"
          "       the first error) and prints each file's model, hash and canonical JSON\n"
          "list   prints the models\n",
          f);
}

static const char *type_name(enum hw_type t)
{
    switch (t) {
    case HW_INT: return "int";
    case HW_FLOAT: return "float";
    case HW_BOOL: return "bool";
    case HW_STRING: return "string";
    }
    return "?";
}

static int show(const char *name)
{
    const struct model_ops *m = model_registry_find(name);
    if (!m)
        return cli_usage_error(VERB, "unknown model '%s' (see 'acceltrace config list')", name);
    const struct hw_schema *s = m->schema;
    printf("model %s: %s\n", m->name, m->summary ? m->summary : "");
    if (m->default_config)
        printf("default config: %s\n", m->default_config);
    if (m->default_energy_table)
        printf("energy table: %s\n", m->default_energy_table);
    printf("%-28s %-6s %-10s %-26s %-14s %s\n", "key", "type", "unit", "range", "default", "doc");
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct hw_key *k = &s->keys[i];
        char range[160] = "", def[64], lo[40], hi[40];
        if (k->type == HW_INT || k->type == HW_FLOAT) {
            csv_format_f64(k->min, lo, sizeof lo);
            csv_format_f64(k->max, hi, sizeof hi);
            snprintf(range, sizeof range, "[%s, %s]", lo, hi);
        } else if (k->type == HW_STRING && k->choices) {
            snprintf(range, sizeof range, "%s", k->choices);
        } else if (k->type == HW_BOOL) {
            snprintf(range, sizeof range, "true|false");
        }
        if (k->type == HW_STRING)
            snprintf(def, sizeof def, "\"%s\"", k->def_str ? k->def_str : "");
        else if (k->type == HW_BOOL)
            snprintf(def, sizeof def, "%s", k->def != 0 ? "true" : "false");
        else
            csv_format_f64(k->def, def, sizeof def);
        printf("%-28s %-6s %-10s %-26s %-14s %s\n", k->key, type_name(k->type),
               k->unit && *k->unit ? k->unit : "-", range, def, k->doc ? k->doc : "");
    }
    return 0;
}

static int check(int n, char **files)
{
    for (int i = 0; i < n; i++) {
        struct hw_config *c;
        struct errmsg e = {0};
        int rc = hw_config_load(&c, files[i], NULL, &e);
        if (rc)
            return cli_fail(rc, errmsg_text(&e));
        printf("%s: ok, model %s, hash %s\n%s\n", files[i], hw_config_schema(c)->model,
               hw_config_hash(c), hw_config_canonical(c));
        hw_config_free(c);
    }
    return 0;
}

int cmd_config(int argc, char **argv);
int cmd_config(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
    if (!strcmp(argv[1], "show")) {
        if (argc != 3)
            return cli_usage_error(VERB, "show takes one model name");
        return show(argv[2]);
    }
    if (!strcmp(argv[1], "check")) {
        if (argc < 3)
            return cli_usage_error(VERB, "check takes config files");
        return check(argc - 2, argv + 2);
    }
    if (!strcmp(argv[1], "list")) {
        for (size_t i = 0; i < model_registry_count(); i++) {
            const struct model_ops *m = model_registry_get(i);
            printf("%-10s %-8s %s\n", m->name, m->workload ? m->workload : "any",
                   m->summary ? m->summary : "");
        }
        return 0;
    }
    return cli_usage_error(VERB, "unknown sub-command '%s'", argv[1]);
}
