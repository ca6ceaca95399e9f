/*
 * Tests of analysis/plot: each plot kind's script is checked by content (terminal, output,
 * title, axis labels with units, data blocks) and, when gnuplot is on PATH, its PNG by
 * signature and size and by gnuplot's exit status 0 (plot_write reports a non-zero exit
 * as ERR_EXTERNAL). A run without gnuplot is tests/sh/replay_plot.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>

#include "analysis/plot.h"
#include "common/io.h"
#include "common/mem.h"
#include "tests/helpers/test_helpers.h"

static char *slurp(const char *name, const char *ext)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s%s", th_tmpdir(), name, ext);
    return th_slurp(p, NULL);
}

static void has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("missing '%s' in:\n%s", needle, text);
}

/* Writes p; checks the PNG when gnuplot is available. */
static void write_and_check(struct plot *p, const char *name, long min_png_bytes)
{
    bool rendered = false;
    int rc = plot_write(p, th_tmpdir(), &rendered);
    if (rc)
        fail_msg("plot_write(%s): %s", name, plot_errmsg(p));
    char path[512];
    snprintf(path, sizeof path, "%s/%s.png", th_tmpdir(), name);
    if (plot_gnuplot_available()) {
        assert_true(rendered);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        print_message("%s.png: %lld bytes\n", name, (long long)st.st_size);
        assert_true(st.st_size >= min_png_bytes);
        char *png = slurp(name, ".png");
        assert_memory_equal(png, "\x89PNG", 4);
        free(png);
    } else {
        assert_false(rendered);
        print_message("gnuplot not on PATH: %s.png not rendered\n", name);
    }
}

static void test_line_panels(void **state)
{
    (void)state;
    struct plot *p = plot_new("epx", PLOT_LINE);
    assert_non_null(p);
    plot_title(p, "E_px vs N_w");
    assert_int_equal(plot_panels(p, 1, 2), 0);
    assert_int_equal(plot_panel(p, 0, "compute only", "N_w", "PEs", "E_px", "pJ"), 0);
    assert_int_equal(plot_panel(p, 1, "system", "N_w", "PEs", "time", "us"), 0);
    double x[] = {5, 10, 15, 20}, y1[] = {300, 250, 230, 228}, y2[] = {641.3, 600, 580, NAN};
    assert_int_equal(plot_series(p, 0, "N_h=5", x, y1, 4), 0);
    assert_int_equal(plot_series(p, 1, "N_h=20", x, y2, 4), 0);
    assert_int_equal(plot_series(p, 2, "bad", x, y1, 4), ERR_USAGE);
    write_and_check(p, "epx", 5000);
    char *gp = slurp("epx", ".gp"), *dat = slurp("epx", ".dat");
    has(gp, "set terminal pngcairo");
    has(gp, "set output 'epx.png'");
    has(gp, "set multiplot layout 1,2 title \"E_px vs N_w\"");
    has(gp, "set title \"compute only\"");
    has(gp, "set xlabel \"N_w [PEs]\"");
    has(gp, "set ylabel \"E_px [pJ]\"");
    has(gp, "set ylabel \"time [us]\"");
    has(gp, "'epx.dat' index 1 using 1:2 with linespoints lt 1 title \"N_h=20\" noenhanced");
    has(dat, "# block 1: N_h=20");
    has(dat, "20 NaN\n");
    has(dat, "15 580\n");
    free(gp);
    free(dat);
    plot_free(p);
}

/* Up to 8 short entries the legend sits right of the data; more go below it. */
static void test_key_placement(void **state)
{
    (void)state;
    double x[] = {1, 2}, y[] = {3, 4};
    struct plot *few = plot_new("few", PLOT_LINE), *many = plot_new("many", PLOT_LINE);
    assert_non_null(few);
    assert_non_null(many);
    for (int i = 0; i < 9; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        if (i < 6)
            assert_int_equal(plot_series(few, 0, name, x, y, 2), 0);
        assert_int_equal(plot_series(many, 0, name, x, y, 2), 0);
    }
    write_and_check(few, "few", 1000);
    write_and_check(many, "many", 1000);
    char *gf = slurp("few", ".gp"), *gm = slurp("many", ".gp");
    has(gf, "set key outside right top vertical\n");
    has(gm, "set key below\n");
    assert_null(strstr(gm, "set key outside"));
    free(gf);
    free(gm);
    plot_free(few);
    plot_free(many);
}

static void test_scatter_log(void **state)
{
    (void)state;
    struct plot *p = plot_new("sc", PLOT_SCATTER);
    plot_title(p, "speedup vs \"sparsity\"");
    plot_xlabel(p, "sparsity", "");
    plot_ylabel(p, "speedup", "x");
    plot_logscale(p, false, true);
    double x[50], y[50];
    for (int i = 0; i < 50; i++) {
        x[i] = i / 50.0;
        y[i] = 1 + i * i;
    }
    assert_int_equal(plot_series(p, 0, "disc", x, y, 50), 0);
    write_and_check(p, "sc", 3000);
    char *gp = slurp("sc", ".gp");
    has(gp, "set title \"speedup vs \\\"sparsity\\\"\"");
    has(gp, "set xlabel \"sparsity\" noenhanced\n");
    has(gp, "set ylabel \"speedup [x]\"");
    has(gp, "set logscale y");
    has(gp, "with points");
    free(gp);
    plot_free(p);
}

/*
 * Per-series markers: open (pt 6) and filled (pt 7) circles without lines, on a scatter
 * plot and over a line plot's lines; the other series keep the kind's style.
 */
static void test_series_marker(void **state)
{
    (void)state;
    double x[] = {1, 2, 3}, y1[] = {10, 20, 30}, y2[] = {12, 25, 33};
    struct plot *p = plot_new("marks", PLOT_SCATTER);
    assert_non_null(p);
    assert_int_equal(plot_series_marker(p, PLOT_MARK_OPEN), ERR_USAGE); /* no series yet */
    assert_int_equal(plot_series(p, 0, "open", x, y1, 3), 0);
    assert_int_equal(plot_series_marker(p, PLOT_MARK_OPEN), 0);
    assert_int_equal(plot_series(p, 0, "filled", x, y2, 3), 0);
    assert_int_equal(plot_series_marker(p, PLOT_MARK_FILLED), 0);
    assert_int_equal(plot_series(p, 0, "default", x, x, 3), 0);
    assert_int_equal(plot_series_marker(p, (enum plot_marker)7), ERR_USAGE);
    write_and_check(p, "marks", 2000);
    char *gp = slurp("marks", ".gp");
    has(gp, "'marks.dat' index 0 using 1:2 with points lt 1 pt 6 ps 1.2 title \"open\"");
    has(gp, "'marks.dat' index 1 using 1:2 with points lt 2 pt 7 ps 0.6 title \"filled\"");
    has(gp, "'marks.dat' index 2 using 1:2 with points lt 3 pt 7 ps 0.6 title \"default\"");
    free(gp);
    plot_free(p);

    struct plot *l = plot_new("marks_line", PLOT_LINE);
    assert_non_null(l);
    assert_int_equal(plot_series(l, 0, "model", x, y1, 3), 0);
    assert_int_equal(plot_series(l, 0, "measured", x, y2, 3), 0);
    assert_int_equal(plot_series_marker(l, PLOT_MARK_OPEN), 0);
    write_and_check(l, "marks_line", 2000);
    gp = slurp("marks_line", ".gp");
    has(gp, "index 0 using 1:2 with linespoints lt 1 title \"model\"");
    has(gp, "index 1 using 1:2 with points lt 2 pt 6 ps 1.2 title \"measured\"");
    free(gp);
    plot_free(l);

    struct plot *h = plot_new("marks_hist", PLOT_HIST);
    assert_non_null(h);
    assert_int_equal(plot_hist_values(h, "v", y1, 3, 0, 40, 4), 0);
    assert_int_equal(plot_series_marker(h, PLOT_MARK_OPEN), ERR_USAGE);
    plot_free(h);
}

static void test_heatmap_overlay(void **state)
{
    (void)state;
    struct plot *p = plot_new("heat", PLOT_HEATMAP);
    plot_title(p, "E_px over shapes");
    plot_xlabel(p, "N_w", "PEs");
    plot_ylabel(p, "N_h", "PEs");
    plot_zlabel(p, "E_px", "pJ/px");
    double xs[] = {5, 10, 15}, ys[] = {5, 10}, z[] = {1, 2, 3, 4, NAN, 6};
    assert_int_equal(plot_heatmap(p, xs, 3, ys, 2, z, "%.1f"), 0);
    double cx[] = {5, 15}, cy[] = {5, 10};
    assert_int_equal(plot_series(p, 0, "N_w*(N_h)", cx, cy, 2), 0);
    write_and_check(p, "heat", 3000);
    char *gp = slurp("heat", ".gp"), *dat = slurp("heat", ".dat");
    has(gp, "set cblabel \"E_px [pJ/px]\"");
    has(gp, "with image");
    has(gp, "with labels");
    has(gp, "index 1 using 1:2:3 with image");
    has(gp, "index 0 using 1:2 with linespoints lt 1 lw 2 title \"N_w*(N_h)\"");
    has(dat, "# block 1: heatmap");
    has(dat, "10 10 NaN\n");
    free(gp);
    free(dat);
    plot_free(p);
}

static void test_hist_and_bars(void **state)
{
    (void)state;
    struct plot *h = plot_new("hist", PLOT_HIST);
    plot_title(h, "conflicts per pseudo-channel");
    plot_xlabel(h, "conflicts", "requests");
    double v[] = {0, 1, 1, 2, 2, 2, 3, 9};
    assert_int_equal(plot_hist_values(h, "salca", v, 8, 0, 10, 5), 0);
    assert_int_equal(plot_series(h, 0, "x", v, v, 1), ERR_USAGE);
    write_and_check(h, "hist", 2000);
    char *dat = slurp("hist", ".dat");
    has(dat, "1 3 2\n"); /* bin [0,2): centre 1, 3 values, width 2 */
    has(dat, "9 1 2\n");
    free(dat);
    char *gp = slurp("hist", ".gp");
    has(gp, "set xlabel \"conflicts [requests]\"");
    has(gp, "set ylabel \"count\"");
    has(gp, "with boxes");
    free(gp);
    plot_free(h);

    struct plot *b = plot_new("bars", PLOT_BARS);
    plot_title(b, "energy by component");
    plot_ylabel(b, "energy", "J");
    const char *cats[] = {"baseline", "ctr", "all"}, *parts[] = {"mac", "hbm"};
    double vals[] = {1, 0.8, 0.6, 2, 1.5, 1.2};
    assert_int_equal(plot_bars(b, cats, 3, parts, 2, vals, true), 0);
    write_and_check(b, "bars", 2000);
    gp = slurp("bars", ".gp");
    dat = slurp("bars", ".dat");
    has(gp, "set style histogram rowstacked");
    has(gp, "using 2:xtic(1) title \"mac\"");
    has(gp, "'' using 3 title \"hbm\"");
    has(gp, "set ylabel \"energy [J]\"");
    has(dat, "\"ctr\" 0.8 1.5\n");
    double lo, hi; /* from zero to the tallest stack (1 + 2) and a margin */
    assert_true(sscanf(strstr(gp, "set yrange ["), "set yrange [%lf:%lf]", &lo, &hi) == 2);
    assert_true(lo == 0 && hi >= 3 && hi < 3.5);
    free(gp);
    free(dat);
    /* a bar plot whose y axis must reach a reference band above every bar */
    plot_bars_top(b, 5.0);
    plot_bars_top(b, -1.0); /* ignored */
    write_and_check(b, "bars", 2000);
    gp = slurp("bars", ".gp");
    assert_true(sscanf(strstr(gp, "set yrange ["), "set yrange [%lf:%lf]", &lo, &hi) == 2);
    assert_true(lo == 0 && hi >= 5 && hi < 5.5);
    free(gp);
    /* a hatched part: only that series gets the pattern */
    assert_int_equal(plot_bars_hatch(b, 1), 0);
    assert_int_equal(plot_bars_hatch(b, 2), ERR_USAGE);
    write_and_check(b, "bars", 2000);
    gp = slurp("bars", ".gp");
    has(gp, "title \"hbm\" noenhanced lt 2 fs pattern 5 border -1");
    assert_null(strstr(gp, "title \"mac\" fs pattern"));
    has(gp, "set xtics rotate by -30"); /* the default tic rotation ... */
    free(gp);
    plot_extra(b, "set xtics rotate by -60"); /* ... unless the caller sets its own */
    write_and_check(b, "bars", 2000);
    gp = slurp("bars", ".gp");
    has(gp, "set xtics rotate by -60");
    assert_null(strstr(gp, "rotate by -30"));
    free(gp);
    plot_free(b);
}

/*
 * A panel with nothing gnuplot can place (NaN values, non-positive values on a log axis, or
 * no series) used to make gnuplot fail ("all points y value undefined"); it now gets fixed
 * ranges and a "no finite values" label while the other panels autoscale.
 */
static void test_no_finite_values(void **state)
{
    (void)state;
    double x[] = {5, 10, 25}, y[] = {1, 2, 3}, nan3[] = {NAN, NAN, NAN};
    struct plot *p = plot_new("nofinite", PLOT_LINE);
    assert_non_null(p);
    assert_int_equal(plot_panels(p, 1, 3), 0);
    assert_int_equal(plot_series(p, 0, "data", x, y, 3), 0);
    assert_int_equal(plot_series(p, 1, "alpha", x, nan3, 3), 0);
    /* panel 2 has a title but no series: its frame is drawn */
    assert_int_equal(plot_panel(p, 2, "empty", NULL, NULL, NULL, NULL), 0);
    write_and_check(p, "nofinite", 2000);
    char *gp = slurp("nofinite", ".gp");
    has(gp, "plot 'nofinite.dat' index 0 using 1:2");
    has(gp, "set label 999 \"no finite values\"");
    has(gp, "plot [5:25] [0:1] 'nofinite.dat' index 1 using 1:2");
    has(gp, "plot [0:1] [0:1] NaN notitle\nunset label 999\n");
    free(gp);
    plot_free(p);

    double yneg[] = {0, -1, -2};
    struct plot *l = plot_new("nofinite_log", PLOT_SCATTER);
    assert_non_null(l);
    plot_logscale(l, false, true);
    assert_int_equal(plot_series(l, 0, "zero", x, yneg, 1), 0);
    write_and_check(l, "nofinite_log", 1000);
    gp = slurp("nofinite_log", ".gp");
    has(gp, "plot [4:6] [1:10] 'nofinite_log.dat' index 0"); /* one x value, widened */
    free(gp);
    plot_free(l);

    struct plot *ok = plot_new("finite", PLOT_SCATTER);
    assert_non_null(ok);
    assert_int_equal(plot_series(ok, 0, "one", x, nan3, 3), 0);
    assert_int_equal(plot_series(ok, 0, "two", x, y, 3), 0); /* one drawable series is enough */
    write_and_check(ok, "finite", 1000);
    gp = slurp("finite", ".gp");
    assert_null(strstr(gp, "label 999"));
    has(gp, "plot 'finite.dat' index 0");
    free(gp);
    plot_free(ok);
}

/* A broken extra command makes gnuplot exit non-zero: ERR_EXTERNAL with its message. */
static void test_gnuplot_failure(void **state)
{
    (void)state;
    if (!plot_gnuplot_available())
        skip();
    struct plot *p = plot_new("broken", PLOT_LINE);
    double x[] = {1, 2};
    plot_series(p, 0, "s", x, x, 2);
    plot_extra(p, "set nosuchoption 3");
    bool rendered = true;
    assert_int_equal(plot_write(p, th_tmpdir(), &rendered), ERR_EXTERNAL);
    assert_false(rendered);
    has(plot_errmsg(p), "gnuplot failed");
    plot_free(p);
}

/* plot_write makes its folder with the parents (io_mkdir_p); a folder that cannot be made is
 * ERR_IO naming it, with nothing written. */
static void test_output_folders(void **state)
{
    (void)state;
    double x[] = {1, 2};
    char sub[320], file[320], bad[352], path[400], want[400];
    struct plot *p = plot_new("folders", PLOT_LINE);
    assert_non_null(p);
    assert_int_equal(plot_series(p, 0, "s", x, x, 2), 0);
    snprintf(sub, sizeof sub, "%s/new/deeper", th_tmpdir());
    if (plot_write(p, sub, NULL))
        fail_msg("plot_write(%s): %s", sub, plot_errmsg(p));
    struct stat st;
    snprintf(path, sizeof path, "%s/folders.gp", sub);
    assert_int_equal(stat(path, &st), 0);

    snprintf(file, sizeof file, "%s/a_file", th_tmpdir());
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/plots", file);
    bool rendered = true;
    assert_int_equal(plot_write(p, bad, &rendered), ERR_USAGE); /* a file named as a folder */
    assert_false(rendered);
    snprintf(want, sizeof want, "cannot create folder '%s'", bad);
    has(plot_errmsg(p), want);
    plot_free(p);
}

/* Text: markup prints as sub/superscripts with the other specials escaped; plain names are
 * noenhanced; epslatex gets LaTeX. Bands: translucent objects with a legend entry each. */
static void test_text_bands(void **state)
{
    (void)state;
    double x[] = {1, 2, 3}, y[] = {3, 4, 5}, y2[] = {1, 2, 7}; /* apart: no overlap note */
    struct plot *p = plot_new("txt", PLOT_LINE);
    assert_non_null(p);
    plot_title(p, "error of x_{k+1} per tokens_per_s");
    plot_xlabel(p, "energy_j", "J");
    assert_int_equal(plot_series(p, 0, "r_{min}", x, y, 3), 0);
    assert_int_equal(plot_series(p, 0, "mode_a", x, y2, 3), 0);
    assert_int_equal(plot_band(p, NAN, NAN, 3.5, 4.5, 2, "paper Fig. 1, CTR: 3.5-4.5"), 0);
    assert_int_equal(plot_band(p, 1, 2, 3, 4, 1, "paper Fig. 1, CTR: 3.5-4.5"), 0); /* shares */
    assert_int_equal(plot_band(p, 1, 2, 5, 4, 1, "bad"), ERR_USAGE);
    write_and_check(p, "txt", 1000);
    char *gp = slurp("txt", ".gp");
    has(gp, "set title \"error of x_{k+1} per tokens\\\\_per\\\\_s\"\n");
    has(gp, "set xlabel \"energy_j [J]\" noenhanced\n");
    has(gp, "title \"r_{min}\",");
    has(gp, "title \"mode_a\" noenhanced");
    has(gp, "set object 101 rect from graph 0, first 3.5 to graph 1, first 4.5 behind fc rgb "
            "'#009E73' fs transparent solid 0.22 border");
    has(gp, "set object 102 rect from first 1, first 3 to first 2, first 4");
    has(gp, "keyentry with boxes lc rgb '#009E73'");
    const char *k = strstr(gp, "keyentry");
    assert_non_null(k);
    assert_null(strstr(k + 1, "keyentry"));                 /* one entry for the shared label */
    has(gp, "set linetype 9 lc rgb '#0072B2' lw 1.5 dt 2"); /* series 9: colour 1 dashed */
    free(gp);
    plot_format(p, PLOT_FMT_EPSLATEX);
    assert_int_equal(plot_write(p, th_tmpdir(), NULL), 0);
    gp = slurp("txt", ".gp");
    has(gp, "set terminal epslatex color size 8.00in,5.60in");
    has(gp, "set output 'txt.tex'");
    has(gp, "set title \"error of x$_{k+1}$ per tokens\\\\_per\\\\_s\"");
    free(gp);
    plot_free(p);
}

/* A sentinel x value is a category left of the numeric range, not x = 0. */
static void test_xcategory(void **state)
{
    (void)state;
    double x[] = {0, 0.03, 0.13}, y[] = {5, 6, 7};
    struct plot *p = plot_new("cat", PLOT_LINE);
    assert_non_null(p);
    assert_int_equal(plot_series(p, 0, "s", x, y, 3), 0);
    assert_int_equal(plot_xcategory(p, 0, "0: the trace's selections"), 0);
    write_and_check(p, "cat", 1000);
    char *gp = slurp("cat", ".gp"), *dat = slurp("cat", ".dat");
    /* span 0.1: the category a quarter of it left of 0.03, the separator half way */
    has(gp, "set xtics add (\"0: the trace's selections\" 0.005)");
    has(gp, "set arrow 100 from first 0.0175, graph 0 to first 0.0175, graph 1 nohead");
    has(dat, "0.03 6\n0.13 7\n\n0.005 5\n"); /* apart from the line */
    assert_null(strstr(dat, "\n0 5\n"));
    free(gp);
    free(dat);
    plot_free(p);
}

/* Formats and sizes: names, extensions, "WxH[unit]" parsing, the process-wide output. */
static void test_formats(void **state)
{
    (void)state;
    enum plot_format f;
    assert_int_equal(plot_format_parse("svg", &f), 0);
    assert_int_equal(f, PLOT_FMT_SVG);
    assert_int_equal(plot_format_parse("gif", &f), ERR_USAGE);
    assert_string_equal(plot_format_ext(PLOT_FMT_EPSLATEX), "tex");
    int w, h;
    assert_int_equal(plot_size_parse("1200x800", PLOT_FMT_PNG, &w, &h), 0);
    assert_int_equal(w, 1200);
    assert_int_equal(h, 800);
    assert_int_equal(plot_size_parse("6x4", PLOT_FMT_PDF, &w, &h), 0); /* inches */
    assert_int_equal(w, 600);
    assert_int_equal(plot_size_parse("15.24x10.16cm", PLOT_FMT_PNG, &w, &h), 0);
    assert_int_equal(w, 600);
    assert_int_equal(h, 400);
    assert_int_equal(plot_size_parse("6x4", PLOT_FMT_PNG, &w, &h), ERR_USAGE); /* 6 px */
    assert_int_equal(plot_size_parse("6x4ft", PLOT_FMT_PDF, &w, &h), ERR_USAGE);
    struct plot_output o = {PLOT_FMT_SVG, 400, 280}, back;
    plot_set_output(&o);
    double x[] = {1, 2}, y[] = {1, 2};
    struct plot *p = plot_new("fmt", PLOT_LINE), *q = plot_new("fmt2", PLOT_LINE);
    assert_non_null(p);
    assert_non_null(q);
    plot_series(p, 0, "a", x, y, 2);
    plot_series(q, 0, "a", x, y, 2);
    plot_size(q, 1600, 560); /* its own size: scaled by 400/800 */
    assert_int_equal(plot_write(p, th_tmpdir(), NULL), 0);
    assert_int_equal(plot_write(q, th_tmpdir(), NULL), 0);
    char *gp = slurp("fmt", ".gp"), *gq2 = slurp("fmt2", ".gp");
    has(gp, "set terminal svg enhanced size 400,280");
    has(gp, "set output 'fmt.svg'");
    has(gq2, "set terminal svg enhanced size 800,280");
    free(gp);
    free(gq2);
    struct plot_output png = {PLOT_FMT_PNG, 0, 0};
    plot_set_output(&png);
    plot_get_output(&back);
    assert_int_equal(back.format, PLOT_FMT_PNG);
    plot_free(p);
    plot_free(q);
}

/* The range "set yrange [lo:hi]" of a script (the first one); false when there is none. */
static bool yrange_of(const char *gp, double *lo, double *hi)
{
    const char *r = strstr(gp, "set yrange [");
    return r && sscanf(r, "set yrange [%lf:%lf]", lo, hi) == 2;
}

/* The "set ytics (...)" list of a script, copied into out. */
static void ytics_of(const char *gp, char *out, size_t n)
{
    const char *r = strstr(gp, "set ytics (");
    assert_non_null(r);
    size_t l = strcspn(r, "\n");
    snprintf(out, n, "%.*s", (int)l, r);
}

/*
 * Axes from the data: a 0.01-point change of a 57% sparsity is drawn on an axis at least
 * 5% of 57 wide (not zoomed to fill it), a log range hugs the data (not two decades
 * beyond it), large values carry one power of ten in the label (never "500000" beside
 * "1x10^6"), a dimensionless unit "1" is not shown, whole-numbered steps get whole tics.
 */
static void test_axes_from_data(void **state)
{
    (void)state;
    double x[] = {0, 1}, y[] = {57.06523167235511, 57.072997237427835};
    struct plot *p = plot_new("flat", PLOT_LINE);
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "speedup", "1");
    assert_int_equal(plot_series(p, 0, "sparsity", x, y, 2), 0);
    write_and_check(p, "flat", 1000);
    char *gp = slurp("flat", ".gp");
    double lo, hi;
    assert_true(yrange_of(gp, &lo, &hi));
    print_message("flat: y %g..%g for data 57.065..57.073\n", lo, hi);
    assert_true(hi - lo >= 0.05 * 57.07);
    assert_true(lo < 57.065 && hi > 57.073);
    has(gp, "set ylabel \"speedup\" noenhanced\n"); /* no "[1]" */
    assert_null(strstr(gp, "[1]"));
    has(gp, "set xtics (\"0\" 0, \"1\" 1)"); /* steps 0 and 1, not 0.2 apart */
    free(gp);
    plot_free(p);

    double lx[] = {5, 10, 15, 20, 25}, ly[] = {12400, 7200, 5800, 4600, 840};
    p = plot_new("logfit", PLOT_LINE);
    plot_logscale(p, false, true);
    assert_int_equal(plot_series(p, 0, "cycles", lx, ly, 5), 0);
    write_and_check(p, "logfit", 1000);
    gp = slurp("logfit", ".gp");
    assert_true(yrange_of(gp, &lo, &hi));
    print_message("logfit: y %g..%g for data 840..12400\n", lo, hi);
    assert_true(lo > 840 / 2.0 && lo < 840); /* within a factor 2, not 100 */
    assert_true(hi < 12400 * 2.0 && hi > 12400);
    free(gp);
    plot_free(p);

    double bx[] = {1, 2, 3, 4}, by[] = {0, 1.5e6, 3e6, 5.2e6};
    p = plot_new("big", PLOT_LINE);
    plot_ylabel(p, "cycles", "cycles");
    assert_int_equal(plot_series(p, 0, "c", bx, by, 4), 0);
    write_and_check(p, "big", 1000);
    gp = slurp("big", ".gp");
    char tics[1024];
    ytics_of(gp, tics, sizeof tics);
    print_message("big: %s\n", tics);
    has(gp, "set ylabel \"cycles [×10^{6} cycles]\"");
    assert_null(strstr(tics, "000\"")); /* mantissas only: "1", "2", ..., one format */
    assert_null(strstr(tics, "^{"));
    has(tics, "\"2\" 2000000");
    free(gp);
    plot_free(p);
}

/* A heatmap whose values span two decades or more gets a log colour scale; one that
 * spans less, or holds zero, keeps the linear one. */
static void test_heatmap_log_colour(void **state)
{
    (void)state;
    double x[] = {1, 2, 3}, z1[9], z2[9];
    for (int i = 0; i < 9; i++) {
        z1[i] = 27.0 / (1 + i * i); /* 27 .. 0.42: 65x */
        z2[i] = 1 + i;
    }
    z1[8] = 0.06; /* 27 .. 0.06: 450x */
    struct plot *p = plot_new("hlog", PLOT_HEATMAP), *q = plot_new("hlin", PLOT_HEATMAP);
    assert_int_equal(plot_heatmap(p, x, 3, x, 3, z1, NULL), 0);
    assert_int_equal(plot_heatmap(q, x, 3, x, 3, z2, NULL), 0);
    write_and_check(p, "hlog", 1000);
    write_and_check(q, "hlin", 1000);
    char *a = slurp("hlog", ".gp"), *b = slurp("hlin", ".gp");
    has(a, "set logscale cb\n");
    assert_null(strstr(b, "logscale cb"));
    free(a);
    free(b);
    plot_free(p);
    plot_free(q);
}

/* Two series within 1% of the axis of each other: the later one is drawn with open
 * markers and a dash and its legend says which it overlaps; series apart are left alone. */
static void test_overlapping_series(void **state)
{
    (void)state;
    double x[] = {0, 1, 2, 3}, q[] = {0.155, 0.156, 0.154, 0.157},
           f[] = {0.156, 0.156, 0.155, 0.157}, a[] = {0.76, 0.77, 0.76, 0.77};
    struct plot *p = plot_new("ovl", PLOT_LINE);
    assert_int_equal(plot_series(p, 0, "Q", x, q, 4), 0);
    assert_int_equal(plot_series(p, 0, "F", x, f, 4), 0);
    assert_int_equal(plot_series(p, 0, "A", x, a, 4), 0);
    write_and_check(p, "ovl", 1000);
    char *gp = slurp("ovl", ".gp");
    has(gp, "index 1 using 1:2 with linespoints lt 2 dt 2 pt 6 ps 1.8 title \"F (overlaps Q)\"");
    has(gp, "title \"Q\" noenhanced");
    has(gp, "title \"A\" noenhanced");
    free(gp);
    plot_free(p);
}

/* Series of one point each: the value is written beside each point, with a note. */
static void test_one_point_panel(void **state)
{
    (void)state;
    double x[] = {1}, y1[] = {143.5}, y2[] = {359.47};
    struct plot *p = plot_new("onept", PLOT_LINE);
    plot_logscale(p, false, true);
    assert_int_equal(plot_series(p, 0, "d_p50", x, y1, 1), 0);
    assert_int_equal(plot_series(p, 0, "d_max", x, y2, 1), 0);
    write_and_check(p, "onept", 1000);
    char *gp = slurp("onept", ".gp");
    has(gp, "set label 900 \"143.5\" at first 1, first 143.5");
    has(gp, "set label 901 \"359.5\" at first 1, first 359.47");
    has(gp, "one point per series");
    free(gp);
    plot_free(p);
}

/*
 * Names and labels with a newline stay one '#' comment line of NAME.dat: every line is
 * blank, a comment, or numbers.
 */
static void test_dat_newline(void **state)
{
    (void)state;
    double x[] = {0, 1, 2}, y[] = {3, 4, 5};
    struct plot *p = plot_new("nl", PLOT_LINE);
    assert_int_equal(plot_xcategory(p, 0, "the trace's\nselections"), 0);
    assert_int_equal(plot_series(p, 0, "mode=a\nb\r", x, y, 3), 0);
    write_and_check(p, "nl", 1000);
    char *dat = slurp("nl", ".dat");
    has(dat, "# block 0: mode=a\\nb\\r (x, y)\n");
    has(dat, "(the trace's\\nselections)");
    for (char *line = dat; *line;) {
        size_t l = strcspn(line, "\n");
        if (l && line[0] != '#') {
            char *end;
            strtod(line, &end);
            strtod(end, &end);
            if (end != line + l)
                fail_msg("not a comment nor numbers: '%.*s'", (int)l, line);
        }
        line += l + (line[l] == '\n');
    }
    free(dat);
    plot_free(p);
}

/* numpy.loadtxt and pandas.read_csv(comment='#') read such a file (Debian's python3). */
static void test_dat_numpy(void **state)
{
    (void)state;
    if (system("/usr/bin/python3 -c 'import numpy, pandas' > /dev/null 2>&1"))
        skip(); /* prints SKIPPED: numpy or pandas is not installed for /usr/bin/python3 */
    double x[] = {0, 1, 2}, y[] = {3, 4, 5};
    struct plot *p = plot_new("nlpy", PLOT_LINE);
    assert_int_equal(plot_xcategory(p, 0, "a\nb"), 0);
    assert_int_equal(plot_series(p, 0, "s=x\ny", x, y, 3), 0);
    assert_int_equal(plot_series(p, 0, "t", x, y, 3), 0);
    write_and_check(p, "nlpy", 1000);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy, pandas, sys; f=sys.argv[1]; "
             "a=numpy.loadtxt(f, comments='#'); "
             "d=pandas.read_csv(f, comment='#', sep=' ', header=None); "
             "assert a.shape == (6, 2) and d.shape == (6, 2), (a.shape, d.shape)\" %s/nlpy.dat",
             th_tmpdir());
    assert_int_equal(system(cmd), 0);
    plot_free(p);
}

int main(void)
{
    if (!th_tmpdir_make("plot"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_panels),        cmocka_unit_test(test_key_placement),
        cmocka_unit_test(test_scatter_log),        cmocka_unit_test(test_series_marker),
        cmocka_unit_test(test_heatmap_overlay),    cmocka_unit_test(test_hist_and_bars),
        cmocka_unit_test(test_no_finite_values),   cmocka_unit_test(test_gnuplot_failure),
        cmocka_unit_test(test_output_folders),     cmocka_unit_test(test_text_bands),
        cmocka_unit_test(test_xcategory),          cmocka_unit_test(test_formats),
        cmocka_unit_test(test_axes_from_data),     cmocka_unit_test(test_heatmap_log_colour),
        cmocka_unit_test(test_overlapping_series), cmocka_unit_test(test_one_point_panel),
        cmocka_unit_test(test_dat_newline),        cmocka_unit_test(test_dat_numpy),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0 && th_tmpdir_remove() != 0)
        return 1;
    return rc;
}
