/* disc_models: where the shipped DiSC weights are and what their sha256 must be. */
#include "capture/disc/disc_models.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool disc_model_shipped(const char *name)
{
    return !strcmp(name, "trained-small");
}

static bool is_file(const char *path)
{
    struct stat sb;
    return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

/* The folder of the running program (no trailing slash), or "" when unknown. */
static void program_dir(char *dir, size_t n)
{
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    dir[0] = 0;
    if (sl <= 0)
        return;
    self[sl] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(dir, n, "%s", self);
}

/* Reads the 64 hex digits at the start of path into sha (lower case). */
static int read_sha(const char *path, char sha[65], struct errmsg *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errmsg_set(e, ERR_NOINPUT, "cannot open '%s' (the weights' sha256)", path);
    char buf[80] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (int i = 0; i < 64; i++) {
        if (i >= (int)got || !isxdigit((unsigned char)buf[i]))
            return errmsg_set(e, ERR_DATA, "'%s': byte %d is not a hex digit (need 64)", path, i);
        sha[i] = (char)tolower((unsigned char)buf[i]);
    }
    sha[64] = 0;
    return 0;
}

int disc_model_find(const char *name, char *path, size_t n, char sha[65], struct errmsg *e)
{
    char dir[PATH_MAX], cand[4][PATH_MAX + 64];
    int nc = 0;
    const char *env = getenv("ACCELTRACE_MODELS");
    program_dir(dir, sizeof dir);
    if (env && *env)
        snprintf(cand[nc++], sizeof cand[0], "%s", env);
    if (dir[0]) {
        snprintf(cand[nc++], sizeof cand[0], "%s/../share/acceltrace/models", dir);
        snprintf(cand[nc++], sizeof cand[0], "%s/../configs/models", dir);
    }
    snprintf(cand[nc++], sizeof cand[0], "configs/models");
    for (int i = 0; i < nc; i++) {
        char file[PATH_MAX + 128], shaf[PATH_MAX + 160];
        if ((size_t)snprintf(file, sizeof file, "%s/%s.safetensors", cand[i], name) >=
                sizeof file ||
            !is_file(file))
            continue;
        if ((size_t)snprintf(path, n, "%s", file) >= n)
            return errmsg_set(e, ERR_LIMIT, "path too long: '%s'", file);
        if ((size_t)snprintf(shaf, sizeof shaf, "%s.sha256", file) >= sizeof shaf)
            return errmsg_set(e, ERR_LIMIT, "path too long: '%s'", file);
        return read_sha(shaf, sha, e);
    }
    return errmsg_set(e, ERR_NOINPUT,
                      "no weights for model '%s': %s.safetensors is not in %s%s%s, "
                      "<program>/../share/acceltrace/models, <program>/../configs/models or "
                      "./configs/models (or give --weights FILE)",
                      name, name, env && *env ? "$ACCELTRACE_MODELS (" : "", env && *env ? env : "",
                      env && *env ? ")," : "");
}
