/*
 * salca_out: output steps of the Salca analyzers (see the header).
 */
#include "analysis/salca_out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int salca_out_csv_open(const char *dir, const char *name, struct csv_writer **w, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return csv_writer_open(w, path, false, e);
}

int salca_out_csv_close(struct csv_writer *w, const char *dir, const char *name, struct errmsg *e)
{
    if (csv_writer_close(w) < 0)
        return errmsg_set(e, ERR_IO, "cannot write '%s/%s': %s", dir, name, strerror(errno));
    return 0;
}

int salca_out_plot(struct plot *p, const char *dir, bool *rendered, struct errmsg *e)
{
    bool r = false;
    int rc = plot_write(p, dir, &r);
    if (rc < 0)
        errmsg_set(e, rc, "plot '%s': %s", dir, plot_errmsg(p));
    if (!r)
        *rendered = false;
    plot_free(p);
    return rc;
}
