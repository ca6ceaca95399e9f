/*
 * corpus_driver: runs a libFuzzer target (LLVMFuzzerTestOneInput) over every file of the
 * directories or files given on the command line, so each fuzz corpus also runs in
 * `make test` under gcc. Exits 0 when every input returned (crashes abort the process);
 * 1 when a path cannot be read or when no input was run at all (an empty or lost corpus
 * tests nothing, so it must not pass).
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "corpus_driver: cannot open '%s'\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "corpus_driver: cannot read '%s'\n", argv[i]);
            bad = 1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            if (!d) {
                fprintf(stderr, "corpus_driver: cannot open folder '%s'\n", argv[i]);
                bad = 1;
            }
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                bad |= run_file(p);
                count++;
            }
            if (d)
                closedir(d);
        } else {
            bad |= run_file(argv[i]);
            count++;
        }
    }
    printf("corpus_driver: %d inputs\n", count);
    if (count == 0) {
        fprintf(stderr, "corpus_driver: no inputs: an empty corpus tests nothing\n");
        return 1;
    }
    return bad;
}
