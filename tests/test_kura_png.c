/*
 * Tests of formats/kura_png: the phase-map hues of docs/kura.md#figures (the generator check) and
 * the phase and grey images written as PNG files.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "formats/kura_png.h"

/* the generator check / docs/kura.md#figures: hue = (theta + pi)/(2 pi), S = V = 1: -pi red, -pi/3
 * green, pi/3 blue. */
static void test_png_hues(void **state)
{
    (void)state;
    uint8_t c[3];
    kura_png_hue(-M_PI, c);
    assert_true(c[0] == 255 && c[1] == 0 && c[2] == 0);
    kura_png_hue(-M_PI / 3, c);
    assert_true(c[0] == 0 && c[1] == 255 && c[2] == 0);
    kura_png_hue(M_PI / 3, c);
    assert_true(c[0] == 0 && c[1] == 0 && c[2] == 255);
    kura_png_hue(0.0, c); /* hue 0.5: cyan */
    assert_true(c[0] == 0 && c[1] == 255 && c[2] == 255);
    kura_png_hue(M_PI, c); /* wraps to -pi */
    assert_true(c[0] == 255 && c[1] == 0 && c[2] == 0);
    char dir[] = "/tmp/kura_png_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/p.png", dir);
    double th[6] = {-M_PI, -M_PI / 3, M_PI / 3, 0, 1, 2};
    assert_int_equal(kura_png_phase(path, th, 2, 3, NULL), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char sig[8];
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    unlink(path);
    snprintf(path, sizeof path, "%s/g.png", dir);
    assert_int_equal(kura_png_grey(path, th, 2, 3, 0.0, 0.2, NULL), 0);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_hues),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
