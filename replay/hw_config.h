/*
 * hw_config: hardware configurations of replayed models (docs/design.md#replay-and-sweeps).
 *
 * Each model declares its keys in C as a struct hw_schema: name, type, unit, inclusive
 * range, default and a one-line doc. A config file is a JSON object
 *
 *   { "model": "count", "extends": "base.json", "field": 7, "vpu": { "width": 16 } }
 *
 * "model" names the schema (replay/model_registry.h); "extends" (optional) names a file,
 * relative to the extending file's folder, whose values are applied first (chains allowed,
 * cycles are errors); "doc" (optional) is a free comment. Nested objects map to dotted
 * schema keys ("vpu.width"). Every other member must be a schema key of the right type
 * within range; keys not given take their defaults.
 *
 * Errors are ERR_CONFIG with a message naming the file, the JSON path and its line and
 * column: "unknown key 'fiel' at $.fiel ('cfg.json' line 3 column 5); did you mean 'field'?",
 * and for bad JSON the parser's line and column. A cross-key check's error (the schema's
 * check) names the file, JSON path, line and column of the key its message starts with. A missing
 * extends target is ERR_CONFIG naming both files.
 *
 * A resolved config (every key set) has a canonical JSON (sorted keys, compact, the model
 * name included, no "extends"/"doc") and a stable hash: the first 16 hex digits of its
 * sha256. Equal values give equal hashes however the file was written.
 *
 * Ownership: hw_config values are owned by the caller and freed with hw_config_free.
 * Getters take a schema key and assert that it exists with that type (a programming error
 * otherwise); models read their values once in new().
 */
#ifndef ACCELTRACE_HW_CONFIG_H
#define ACCELTRACE_HW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum hw_type {
    HW_INT,    /* JSON integer (int64) */
    HW_FLOAT,  /* JSON number (double); integers accepted */
    HW_BOOL,   /* true / false */
    HW_STRING, /* JSON string, optionally one of `choices` */
};

/* One key of a model's schema. */
struct hw_key {
    const char *key; /* "clock_ghz" or dotted "vpu_cycles.softmax" */
    enum hw_type type;
    const char *unit;    /* "GHz", "B", "" for none */
    double min, max;     /* inclusive range for HW_INT/HW_FLOAT */
    double def;          /* default for HW_INT/HW_FLOAT/HW_BOOL (0/1) */
    const char *def_str; /* default for HW_STRING */
    const char *choices; /* HW_STRING: allowed values separated by '|', or NULL for any */
    const char *doc;     /* one line: meaning and source ("[paper]", "[decision]") */
};

struct hw_config;

/* A model's schema: its keys and an optional cross-key check. */
struct hw_schema {
    const char *model; /* model name, as in the "model" key */
    const struct hw_key *keys;
    size_t n_keys;
    /* Optional: rejects combinations (e.g. "dpu_count must be a power of two"); the message
     * should name the key. Called after every load/set; ERR_CONFIG. */
    int (*check)(const struct hw_config *cfg, struct errmsg *e);
};

/* Schema rows, e.g. HW_KEY_INT("cores", "", 1, 1024, 38, "core count [paper]"). */
#define HW_KEY_INT(k, u, lo, hi, d, docs)                                                          \
    {                                                                                              \
        .key = (k), .type = HW_INT, .unit = (u), .min = (lo), .max = (hi), .def = (d),             \
        .doc = (docs)                                                                              \
    }
#define HW_KEY_FLOAT(k, u, lo, hi, d, docs)                                                        \
    {                                                                                              \
        .key = (k), .type = HW_FLOAT, .unit = (u), .min = (lo), .max = (hi), .def = (d),           \
        .doc = (docs)                                                                              \
    }
#define HW_KEY_BOOL(k, d, docs)                                                                    \
    {                                                                                              \
        .key = (k), .type = HW_BOOL, .unit = "", .min = 0, .max = 1, .def = (d), .doc = (docs)     \
    }
#define HW_KEY_STRING(k, d, ch, docs)                                                              \
    {                                                                                              \
        .key = (k), .type = HW_STRING, .unit = "", .def_str = (d), .choices = (ch), .doc = (docs)  \
    }

/*
 * Loads and validates a config file. schema NULL: the file's "model" key picks the schema
 * through the model registry; otherwise "model", when present, must equal schema->model.
 * 0 with *out set (free with hw_config_free), or ERR_CONFIG/ERR_IO/ERR_NOMEM with e set.
 */
int hw_config_load(struct hw_config **out, const char *path, const struct hw_schema *schema,
                   struct errmsg *e);
/* Same from JSON text; name is used in messages ("<string>" if NULL); extends are
 * resolved relative to the current directory. */
int hw_config_parse(struct hw_config **out, const char *json_text, const char *name,
                    const struct hw_schema *schema, struct errmsg *e);
/* Config with every key at its default. */
int hw_config_defaults(struct hw_config **out, const struct hw_schema *schema);
void hw_config_free(struct hw_config *c);
/* Deep copy; 0 or ERR_NOMEM. */
int hw_config_clone(struct hw_config **out, const struct hw_config *c);

/*
 * Sets one key from a JSON value given as text ("16", "true", "\"mul\"", "0.5"), validating
 * type and range (not the cross-key check: call hw_config_check after the last set);
 * `origin` names where the value comes from in messages ("'grid.json' $.dpu_count[2]").
 * 0 or ERR_CONFIG (e set).
 */
int hw_config_set_json(struct hw_config *c, const char *key, const char *json_value,
                       const char *origin, struct errmsg *e);
/* Runs the schema's cross-key check (no-op without one). 0 or ERR_CONFIG. */
int hw_config_check(const struct hw_config *c, struct errmsg *e);

/*
 * The key of s a cross-key check's message is about: the longest key the message starts
 * with, followed by a character that cannot continue a key ("dpu_count must be a power of
 * two" -> dpu_count); NULL when none. Used to give such errors the key's position.
 */
const struct hw_key *hw_schema_message_key(const struct hw_schema *s, const char *msg);

const struct hw_schema *hw_config_schema(const struct hw_config *c);
/* Schema key by name, or NULL. */
const struct hw_key *hw_schema_find(const struct hw_schema *s, const char *key);
/*
 * For an unknown key: appends "; did you mean 'KEY'?" to e's message when a key of s is
 * close to key (common/suggest.h), else "; 'acceltrace config show MODEL' lists the keys",
 * so the position already in the message stays before the hint. Returns e->code
 * (ERR_CONFIG when e is NULL).
 */
int hw_schema_hint(struct errmsg *e, const struct hw_schema *s, const char *key);

/* Getters (key must exist in the schema with that type). */
int64_t hw_config_int(const struct hw_config *c, const char *key);
double hw_config_float(const struct hw_config *c, const char *key); /* HW_INT too */
bool hw_config_bool(const struct hw_config *c, const char *key);
const char *hw_config_str(const struct hw_config *c, const char *key); /* owned by c */

/*
 * Value of schema key i as text for tables: integers in decimal, floats in the shortest
 * form that reads back exactly, bools true/false, strings as is. buf of n bytes.
 */
void hw_config_value_text(const struct hw_config *c, size_t i, char *buf, size_t n);

/* Canonical JSON (owned by c, valid until the next set) and its 16-hex-digit hash. */
const char *hw_config_canonical(const struct hw_config *c);
const char *hw_config_hash(const struct hw_config *c);

/*
 * Line and column (1-based) in JSON text of the member or element at a path of n
 * components: keys[i] names an object member, or is NULL for array element idx[i]. Used
 * for messages about files whose values jansson already parsed. false when not found.
 */
bool hw_json_locate(const char *text, const char *const *keys, const size_t *idx, size_t n,
                    int *line, int *col);

/* The file it was loaded from ("" for parsed text or defaults). */
const char *hw_config_path(const struct hw_config *c);

#endif
