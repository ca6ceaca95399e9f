/*
 * fuzz_tmp: scratch files for fuzz targets whose loaders take a path (safetensors mmaps its
 * file, checkpoints are directories, config "extends" names files). One folder per process
 * in /dev/shm (or $TMPDIR, or /tmp when /dev/shm is missing), created on first use; files
 * are rewritten for every input and the folder is removed at exit (and by a later process
 * when its own died first). Header-only because
 * every target is one translation unit (scripts/fuzz.sh, the Makefile's fuzz rule).
 */
#ifndef ACCELTRACE_FUZZ_TMP_H
#define ACCELTRACE_FUZZ_TMP_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"

static char fuzz_tmp_path[256];

/* Removes the scratch folder (atexit). */
static inline void fuzz_tmp_cleanup(void)
{
    if (fuzz_tmp_path[0])
        (void)io_remove_tree(fuzz_tmp_path);
}

/*
 * Removes the scratch folders of processes that are gone: libFuzzer ends crashing inputs
 * and its -fork jobs without running atexit handlers.
 */
static inline void fuzz_tmp_sweep(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        long pid;
        char tail;
        if (sscanf(de->d_name, "acceltrace-fuzz-%ld%c", &pid, &tail) != 1 || pid <= 0 ||
            pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[512];
        if (snprintf(p, sizeof p, "%s/%s", base, de->d_name) < (int)sizeof p)
            (void)io_remove_tree(p);
    }
    if (d)
        closedir(d);
}

/* The scratch folder (created on first call), or NULL when it cannot be made. */
static inline const char *fuzz_tmp_dir(void)
{
    if (fuzz_tmp_path[0])
        return fuzz_tmp_path;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : NULL;
    if (!base)
        base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    fuzz_tmp_sweep(base);
    snprintf(fuzz_tmp_path, sizeof fuzz_tmp_path, "%s/acceltrace-fuzz-%ld", base, (long)getpid());
    if (io_mkdir_p(fuzz_tmp_path, 0700, NULL)) {
        fuzz_tmp_path[0] = 0;
        return NULL;
    }
    atexit(fuzz_tmp_cleanup);
    return fuzz_tmp_path;
}

/*
 * Path of NAME (a file or "sub/file") in the scratch folder into out (n bytes).
 * 0, or -1 without a scratch folder.
 */
static inline int fuzz_tmp_name(const char *name, char *out, size_t n)
{
    const char *dir = fuzz_tmp_dir();
    if (!dir)
        return -1;
    return snprintf(out, n, "%s/%s", dir, name) < (int)n ? 0 : -1;
}

/* A fresh, empty folder NAME in the scratch folder; its path into out. 0 or -1. */
static inline int fuzz_tmp_fresh_dir(const char *name, char *out, size_t n)
{
    if (fuzz_tmp_name(name, out, n))
        return -1;
    if (io_remove_tree(out))
        return -1;
    return io_mkdir_p(out, 0700, NULL) ? -1 : 0;
}

/*
 * Writes len bytes to NAME (a file, or "sub/file" in a folder made before) in the scratch folder
 * and puts its path in out (n bytes). 0, or -1 when the folder or the file cannot be written.
 */
static inline int fuzz_tmp_write(const char *name, const uint8_t *data, size_t len, char *out,
                                 size_t n)
{
    if (fuzz_tmp_name(name, out, n))
        return -1;
    FILE *f = fopen(out, "wb");
    if (!f)
        return -1;
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    return fclose(f) == 0 && w == len ? 0 : -1;
}

#endif
