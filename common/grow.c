#include "common/grow.h"

#include "common/err.h"
#include "common/mem.h"

int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap > (size_t)-1 / 2 ? need : *cap * 2;
    if (nc < need)
        nc = need;
    if (nc < GROW_MIN)
        nc = GROW_MIN;
    size_t bytes;
    if (!mem_mul(nc, elem, &bytes)) {
        /* the doubled size overflows: try the exact need before giving up */
        nc = need;
        if (!mem_mul(nc, elem, &bytes))
            return ERR_LIMIT;
    }
    void *q = mem_realloc(*p, bytes ? bytes : 1);
    if (!q)
        return ERR_NOMEM;
    *p = q;
    *cap = nc;
    return 0;
}
