/*
 * cmd_config: `acceltrace config show MODEL | check FILE... | diff A B | list`: the hardware
 * config schemas of the replay models, validation of config files and the keys in which
 * two configs differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cli_set.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/suggest.h"
#include "formats/csv.h"
#include "replay/model_registry.h"

#define VERB "config"

enum { OPT_SET = 1 };

static const struct cli_opt opts[] = {
    CLI_OPT_SET(OPT_SET),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_config_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace config show MODEL\n"
             "       acceltrace config check FILE.json... [--set KEY=VALUE]...\n"
             "       acceltrace config diff A.json B.json\n"
             "       acceltrace config list\n"
             "\n"
             "show   prints every key of MODEL's hardware config: type, unit, range, default, doc\n"
             "check  validates config files (exit 3 with file, JSON path, line and column on\n"
             "       the first error) and prints each file's model, hash and canonical JSON\n"
             "       (--set: with those keys overridden, as replay --set would)\n"
             "diff   prints both configs' model and hash, then each key whose resolved value\n"
             "       differs (\"extends\", defaults and layout applied: the canonical JSON),\n"
             "       \"KEY: A -> B\"; exit 0 whether or not they differ\n"
             "list   prints the models\n",
    .opts = opts,
    .positional = "FILE",
    .subs = "show check diff list",
    .epilog = "'acceltrace config SUB --help' describes each\n",
};

/* The grammars of the sub-verbs (their own --help); the options are config's. */
static const struct cli_spec show_spec = {
    .verb = "config show",
    .usage = "usage: acceltrace config show MODEL [--json]\n\n"
             "prints every key of MODEL's hardware config (MODEL: see 'acceltrace config\n"
             "list'): key, type, unit, inclusive range or choices, default and a one-line doc\n"
             "with its source; the model's default config file and energy table when it has\n"
             "them. --json: {\"model\", \"summary\", \"keys\": [{key, type, unit, min, max,\n"
             "default, choices, doc}]}\n",
    .opts = opts,
};
static const struct cli_spec check_spec = {
    .verb = "config check",
    .usage = "usage: acceltrace config check FILE.json... [--set KEY=VALUE]... [--json]\n\n"
             "loads each config file as replay would (\"extends\" chains included) and prints\n"
             "'FILE: ok, model M, hash H' and the canonical JSON; the first error exits 3\n"
             "naming the file, the JSON path, line and column (an unknown key with the\n"
             "closest real one); --set overrides keys as replay --set would\n",
    .opts = opts,
    .positional = "FILE",
};
static const struct cli_spec diff_spec = {
    .verb = "config diff",
    .usage = "usage: acceltrace config diff A.json B.json [--json]\n\n"
             "prints both configs' model and hash, then each key whose resolved value\n"
             "differs (\"extends\", defaults and layout applied: the canonical JSON),\n"
             "\"KEY: A -> B\"; exit 0 whether or not they differ\n",
    .opts = opts,
    .positional = "FILE",
};
static const struct cli_spec list_spec = {
    .verb = "config list",
    .usage = "usage: acceltrace config list [--json]\n\n"
             "prints the replay models: name, the workload whose traces each replays, summary\n",
    .opts = opts,
};

static const char *type_name(enum hw_type t);

/* The JSON of a number that may be integral. */
static json_t *jnum(double v)
{
    return v == (double)(json_int_t)v && v > -9e15 && v < 9e15 ? json_integer((json_int_t)v)
                                                               : json_real(v);
}

/* `config show --json`: the model and its keys, each with type, unit, range and default. */
static int show_json(const struct model_ops *m)
{
    const struct hw_schema *s = m->schema;
    json_t *keys = json_array();
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct hw_key *k = &s->keys[i];
        json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "key", k->key, "type", type_name(k->type),
                              "unit", k->unit ? k->unit : "", "doc", k->doc ? k->doc : "");
        if (k->type == HW_INT || k->type == HW_FLOAT) {
            json_object_set_new(o, "min", jnum(k->min));
            json_object_set_new(o, "max", jnum(k->max));
            json_object_set_new(o, "default", jnum(k->def));
        } else if (k->type == HW_BOOL) {
            json_object_set_new(o, "default", json_boolean(k->def != 0));
        } else {
            json_object_set_new(o, "default", json_string(k->def_str ? k->def_str : ""));
            if (k->choices)
                json_object_set_new(o, "choices", json_string(k->choices));
        }
        json_array_append_new(keys, o);
    }
    json_t *j = json_pack("{s:s,s:s,s:o}", "model", m->name, "summary",
                          m->summary ? m->summary : "", "keys", keys);
    if (j && m->default_config)
        json_object_set_new(j, "default_config", json_string(m->default_config));
    if (j && m->default_energy_table)
        json_object_set_new(j, "energy_table", json_string(m->default_energy_table));
    return cli_print_json(j);
}

static const char *type_name(enum hw_type t)
{
    switch (t) {
    case HW_INT:
        return "int";
    case HW_FLOAT:
        return "float";
    case HW_BOOL:
        return "bool";
    case HW_STRING:
        return "string";
    }
    return "?";
}

static int show(const char *name, bool json)
{
    const struct model_ops *m = model_registry_find(name);
    if (!m)
        return model_registry_closest(name)
                   ? cli_usage_error(VERB, "unknown model '%s'; did you mean '%s'?", name,
                                     model_registry_closest(name))
                   : cli_usage_error(VERB, "unknown model '%s' (see 'acceltrace config list')",
                                     name);
    if (json)
        return show_json(m);
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

static int check(int n, char **files, const struct cli_sets *sets, bool json)
{
    json_t *arr = json ? json_array() : NULL;
    for (int i = 0; i < n; i++) {
        struct hw_config *c;
        struct errmsg e = {0};
        int rc = hw_config_load(&c, files[i], NULL, &e);
        if (rc) {
            json_decref(arr);
            return cli_fail(rc, errmsg_text(&e));
        }
        if ((rc = cli_sets_apply(sets, VERB, c))) {
            json_decref(arr);
            hw_config_free(c);
            return rc;
        }
        if (json)
            json_array_append_new(arr,
                                  json_pack("{s:s,s:s,s:s,s:o?}", "file", files[i], "model",
                                            hw_config_schema(c)->model, "hash", hw_config_hash(c),
                                            "config", json_loads(hw_config_canonical(c), 0, NULL)));
        else
            printf("%s: ok, model %s, hash %s\n%s\n", files[i], hw_config_schema(c)->model,
                   hw_config_hash(c), hw_config_canonical(c));
        hw_config_free(c);
    }
    return json ? cli_print_json(arr) : 0;
}

/* A canonical JSON value as text for `config diff`: floats in the shortest form that reads
 * back exactly (csv_format_f64), the rest as compact JSON; "(none)" for no value. */
static void diff_value(const json_t *v, char *out, size_t n)
{
    if (!v) {
        snprintf(out, n, "(none)");
        return;
    }
    if (json_is_real(v)) {
        csv_format_f64(json_real_value(v), out, n);
        return;
    }
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, n, "%s", t ? t : "?");
    free(t);
}

/*
 * `config diff A B`: the keys whose values differ between the canonical JSON of two
 * configs (a key only one model has is "(none)" on the other side). --json: {"a": {file,
 * model, hash}, "b": {...}, "differ": [{"key", "a", "b"}...]}.
 */
static int diff(char **files, bool json)
{
    struct hw_config *c[2] = {NULL, NULL};
    json_t *j[2] = {NULL, NULL}, *out = NULL, *arr = NULL;
    struct errmsg e = {0};
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        if ((rc = hw_config_load(&c[i], files[i], NULL, &e)))
            rc = cli_fail(rc, errmsg_text(&e));
    for (int i = 0; i < 2 && !rc; i++)
        if (!(j[i] = json_loads(hw_config_canonical(c[i]), 0, NULL)))
            rc = cli_fail(ERR_NOMEM, "out of memory");
    if (rc)
        goto done;
    /* every key of A in order, then B's keys that A lacks */
    json_t *keys = json_array();
    const char *k;
    json_t *v;
    for (int i = 0; i < 2; i++)
        json_object_foreach(j[i], k, v) if (i == 0 || !json_object_get(j[0], k))
            json_array_append_new(keys, json_string(k));
    arr = json_array();
    if (!json)
        for (int i = 0; i < 2; i++)
            printf("%s %s: model %s, hash %s\n", i ? "b" : "a", files[i],
                   hw_config_schema(c[i])->model, hw_config_hash(c[i]));
    size_t ki, n_diff = 0;
    json_t *jk;
    json_array_foreach(keys, ki, jk)
    {
        const char *key = json_string_value(jk);
        json_t *va = json_object_get(j[0], key), *vb = json_object_get(j[1], key);
        if (va && vb && json_equal(va, vb))
            continue;
        char ta[512], tb[512];
        diff_value(va, ta, sizeof ta);
        diff_value(vb, tb, sizeof tb);
        n_diff++;
        if (json)
            json_array_append_new(arr, json_pack("{s:s,s:O?,s:O?}", "key", key, "a", va, "b", vb));
        else
            printf("%s: %s -> %s\n", key, ta, tb);
    }
    if (!json)
        printf("%zu key(s) differ\n", n_diff);
    json_decref(keys);
    if (json) {
        out = json_object();
        for (int i = 0; i < 2; i++)
            json_object_set_new(out, i ? "b" : "a",
                                json_pack("{s:s,s:s,s:s}", "file", files[i], "model",
                                          hw_config_schema(c[i])->model, "hash",
                                          hw_config_hash(c[i])));
        json_object_set(out, "differ", arr);
        rc = cli_print_json(out);
    }
done:
    json_decref(arr);
    for (int i = 0; i < 2; i++) {
        json_decref(j[i]);
        hw_config_free(c[i]);
    }
    return rc;
}

/* `config list`: the models, their workload and summary. */
static int list(bool json)
{
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < model_registry_count(); i++) {
        const struct model_ops *m = model_registry_get(i);
        if (json)
            json_array_append_new(arr,
                                  json_pack("{s:s,s:s?,s:s}", "name", m->name, "workload",
                                            m->workload, "summary", m->summary ? m->summary : ""));
        else
            printf("%-10s %-8s %s\n", m->name, m->workload ? m->workload : "any",
                   m->summary ? m->summary : "");
    }
    return json ? cli_print_json(arr) : 0;
}

int cmd_config(int argc, char **argv)
{
    bool json = false;
    const char *sub = NULL;
    struct cli_sets sets = {0};
    const struct cli_spec *spec = &cmd_config_spec;
    char **args = mem_calloc((size_t)argc + 1, sizeof *args);
    int n = 0, rc;
    if (!args)
        return cli_fail(ERR_NOMEM, "out of memory");
    /* a sub-verb first parses with its own grammar, so `config show --help` is its help */
    static const struct {
        const char *name;
        const struct cli_spec *spec;
    } subs[] = {
        {"show", &show_spec}, {"check", &check_spec}, {"diff", &diff_spec}, {"list", &list_spec}};
    if (argc > 1)
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (!strcmp(argv[1], subs[i].name)) {
                sub = subs[i].name;
                spec = subs[i].spec;
                argc--;
                argv++;
            }
    struct cli_parser p;
    cli_parser_init(&p, spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD) {
            rc = cli_next_exit(id);
            goto done;
        }
        if (id == OPT_SET && (rc = cli_sets_add(&sets, VERB, p.arg)))
            goto done;
        else if (id == CLI_POSITIONAL && !sub)
            sub = p.arg;
        else if (id == CLI_POSITIONAL)
            args[n++] = (char *)p.arg;
    }
    json = p.common.json;
    if (!sub) {
        cli_help(stderr, &cmd_config_spec);
        rc = 2;
    } else if (!strcmp(sub, "show")) {
        rc = n != 1 ? cli_usage_error(VERB, "show takes one model name") : show(args[0], json);
    } else if (sets.n && strcmp(sub, "check")) {
        rc = cli_usage_error(VERB, "--set goes with check");
    } else if (!strcmp(sub, "check")) {
        rc =
            n < 1 ? cli_usage_error(VERB, "check takes config files") : check(n, args, &sets, json);
    } else if (!strcmp(sub, "diff")) {
        rc = n != 2 ? cli_usage_error(VERB, "diff takes two config files") : diff(args, json);
    } else if (!strcmp(sub, "list")) {
        rc = n ? cli_usage_error(VERB, "list takes no argument") : list(json);
    } else {
        struct suggest sg;
        suggest_init(&sg, sub, strlen(sub));
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            suggest_add(&sg, subs[i].name);
        rc = suggest_result(&sg)
                 ? cli_usage_error(VERB, "unknown sub-command '%s'; did you mean '%s'?", sub,
                                   suggest_result(&sg))
                 : cli_usage_error(VERB, "unknown sub-command '%s' (show, check, diff or list)",
                                   sub);
    }
done:
    mem_free(args);
    return rc;
}
