/*
 * plot_text: the text of gnuplot scripts (analysis/plot_impl.h): quoted strings, numbers,
 * and rendered text by the rule of plot.h (markup, literal noenhanced text, LaTeX for
 * epslatex).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot_impl.h"
#include "common/buf.h"
#include "formats/csv.h"

/* A gnuplot double-quoted string. */
void plot_gq(struct buf *b, const char *s)
{
    buf_append(b, "\"", 1);
    for (; !buf_err(b) && s && *s; s++) {
        if (*s == '"' || *s == '\\')
            buf_append(b, "\\", 1);
        buf_append(b, *s == '\n' ? " " : s, 1);
    }
    buf_append(b, "\"", 1);
}

void plot_num(char *t, size_t n, double v)
{
    if (isnan(v))
        snprintf(t, n, "NaN");
    else
        csv_format_f64(v, t, n);
}

/* How text is written: the format of the plot being built (set by build_gp). */
bool plot_text_latex;

/* One character c of a gnuplot double-quoted string, "\n" for a newline. */
static void gq_char(struct buf *b, char c)
{
    if (c == '"' || c == '\\')
        buf_append(b, "\\", 1);
    if (c == '\n')
        buf_append(b, "\\n", 2);
    else
        buf_append(b, &c, 1);
}

/* True when s holds sub/superscript markup ("_{" or "^{"). */
static bool has_markup(const char *s)
{
    return s && (strstr(s, "_{") || strstr(s, "^{"));
}

/* The end of the brace group opening at s[0] == '{' (one past its '}', or the string's end). */
static const char *group_end(const char *s)
{
    int depth = 0;
    for (; *s; s++) {
        depth += *s == '{';
        depth -= *s == '}';
        if (!depth)
            return s + 1;
    }
    return s;
}

/* s as LaTeX for epslatex: markup groups in math mode, TeX's specials escaped. */
static void gq_latex(struct buf *b, const char *s)
{
    for (; s && *s && !buf_err(b);) {
        if ((*s == '_' || *s == '^') && s[1] == '{') {
            const char *e = group_end(s + 1);
            gq_char(b, '$');
            for (; s < e; s++)
                gq_char(b, *s);
            gq_char(b, '$');
            continue;
        }
        const char *rep = NULL;
        switch (*s) {
        case '_':
        case '%':
        case '&':
        case '#':
        case '$':
        case '{':
        case '}':
            gq_char(b, '\\');
            break;
        case '^':
            rep = "\\^{}";
            break;
        case '~':
            rep = "\\~{}";
            break;
        case '\\':
            rep = "\\textbackslash{}";
            break;
        default:
            break;
        }
        if (rep)
            for (; *rep; rep++)
                gq_char(b, *rep);
        else
            gq_char(b, *s);
        s++;
    }
}

/*
 * Rendered text (titles, labels, legend entries) as a quoted gnuplot string, by the rule
 * of plot.h: markup keeps its groups and escapes every other special character of
 * enhanced text; literal text (no markup, and not `escaped`) is written as is and
 * followed by " noenhanced"; for epslatex, LaTeX. `escaped`: escape instead of
 * noenhanced, where gnuplot takes no such keyword (tic labels).
 */
void plot_gtext_mode(struct buf *b, const char *s, bool escaped)
{
    buf_append(b, "\"", 1);
    if (plot_text_latex) {
        gq_latex(b, s);
        buf_append(b, "\"", 1);
        return;
    }
    bool markup = has_markup(s);
    for (; s && *s && !buf_err(b);) {
        if (markup && (*s == '_' || *s == '^') && s[1] == '{') {
            const char *e = group_end(s + 1);
            for (; s < e; s++)
                gq_char(b, *s);
            continue;
        }
        if ((markup || escaped) && strchr("_^@&~{}", *s))
            gq_char(b, '\\'); /* "\\_" in the script: enhanced text's escaped '_' */
        gq_char(b, *s++);
    }
    buf_append(b, "\"", 1);
    if (!markup && !escaped)
        buf_printf(b, " noenhanced");
}

void plot_gtext(struct buf *b, const char *s)
{
    plot_gtext_mode(b, s, false);
}

void plot_label_line(struct buf *b, const char *cmd, const char *label, const char *unit)
{
    if (!label || !*label)
        return;
    char t[512];
    if (unit && *unit && strcmp(unit, "1")) /* "1": dimensionless, no unit shown */
        snprintf(t, sizeof t, "%s [%s]", label, unit);
    else
        snprintf(t, sizeof t, "%s", label);
    buf_printf(b, "set %s ", cmd);
    plot_gtext(b, t);
    buf_append(b, "\n", 1);
}
