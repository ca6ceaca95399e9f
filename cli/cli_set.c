/*
 * cli_set: --set KEY=VALUE config overrides (see cli_set.h). The value goes through
 * hw_config_set_json with the --set text as its origin, so its messages are those of a
 * config file's key with "(--set KEY=VALUE)" where a file gives its path and line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cli_set.h"
#include "common/mem.h"

int cli_sets_add(struct cli_sets *s, const char *verb, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return cli_usage_error(verb, "--set wants KEY=VALUE, not '%s'", arg);
    if (s->n == CLI_SET_MAX)
        return cli_usage_error(verb, "more than %d --set", CLI_SET_MAX);
    s->kv[s->n++] = arg;
    return 0;
}

/* VALUE of one override as JSON text: a string key's bare word is quoted. Caller frees. */
static char *value_json(const struct hw_key *k, const char *v)
{
    if (k && k->type == HW_STRING && v[0] != '"') {
        json_t *j = json_string(v);
        char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        char *d = t ? mem_strdup(t) : NULL;
        free(t);
        json_decref(j);
        return d;
    }
    return mem_strdup(v);
}

int cli_sets_apply(const struct cli_sets *s, const char *verb, struct hw_config *c)
{
    struct errmsg e = {0};
    for (size_t i = 0; i < s->n; i++) {
        const char *eq = strchr(s->kv[i], '=');
        char key[256], origin[300];
        size_t kl = (size_t)(eq - s->kv[i]);
        if (kl >= sizeof key)
            return cli_usage_error(verb, "--set key too long ('%.40s...')", s->kv[i]);
        memcpy(key, s->kv[i], kl);
        key[kl] = 0;
        snprintf(origin, sizeof origin, "--set %.280s", s->kv[i]);
        char *json = value_json(hw_schema_find(hw_config_schema(c), key), eq + 1);
        if (!json)
            return cli_fail(ERR_NOMEM, "out of memory");
        int rc = hw_config_set_json(c, key, json, origin, &e);
        mem_free(json);
        if (rc)
            return cli_usage_error(verb, "%s", errmsg_text(&e));
    }
    if (s->n && hw_config_check(c, &e))
        return cli_usage_error(verb, "%s (with --set)", errmsg_text(&e));
    return 0;
}

bool cli_sets_shell(const struct cli_sets *s, char *out, size_t n)
{
    size_t k = 0;
    if (!n)
        return false;
    out[0] = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k + 8 >= n)
            return false;
        k += (size_t)snprintf(out + k, n - k, " --set '");
        for (const char *p = s->kv[i]; *p; p++) {
            if (k + 6 >= n)
                return false;
            if (*p == '\'') {
                memcpy(out + k, "'\\''", 4);
                k += 4;
            } else {
                out[k++] = *p;
            }
        }
        if (k + 2 >= n)
            return false;
        out[k++] = '\'';
        out[k] = 0;
    }
    return true;
}
