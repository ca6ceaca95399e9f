/*
 * salca_calibrated: the derived per-head tables of Llama-3.1-8B-Instruct and their mapping
 * (see the header; citations and derivation in docs/models.md, "Calibrated Salca source").
 *
 * The tables are derived from files under the MIT License: DuoAttention, Copyright (c) 2024
 * MIT HAN Lab; MInference, Copyright (c) Microsoft Corporation. Permission is hereby
 * granted, free of charge, to any person obtaining a copy of this software and associated
 * documentation files (the "Software"), to deal in the Software without restriction,
 * including without limitation the rights to use, copy, modify, merge, publish,
 * distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom
 * the Software is furnished to do so, subject to the following conditions: The above
 * copyright notice and this permission notice shall be included in all copies or
 * substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY
 * OF ANY KIND, EXPRESS OR IMPLIED.
 */
#include "capture/salca/salca_calibrated.h"

#include <math.h>

const char salca_calib_sources[] =
    "mit-han-lab/duo-attention@53b606ce291c1036f9f940eac47849d7878f589a:"
    "attn_patterns/Meta-Llama-3.1-8B-Instruct/"
    "lr=0.02-reg=0.05-ctx=1000_128000-multi_passkey10/full_attention_heads.tsv; "
    "microsoft/MInference@5688b1887ded3b00711b84f9cd0c33da73e54f56:"
    "minference/configs/Llama_3.1_8B_Instruct_128k_kv_out_v32_fit_o_best_pattern.json";

void salca_calib_params_default(struct salca_calib_params *p)
{
    *p = (struct salca_calib_params){
        .retrieval_frac = 0.5,
        .logit_std = 1.0,
        .sink_tokens = 4,
        .c_sink = 10.0,
        .local_tokens = 100,
        .c_local = 10.0,
        .stream_window = 256,
        .search_tokens = 30000,
        .c_needle = 8.0,
        .query_jitter = 0.2,
    };
}

/* DuoAttention gates of Llama-3.1-8B-Instruct, (layer, KV head), rounded to 1/1000. */
static const unsigned short duo_gate_milli[SALCA_CAL_LAYERS][SALCA_CAL_KV_HEADS] = {
    {605, 0, 969, 684, 25, 969, 40, 0},
    {996, 0, 812, 1000, 0, 621, 406, 1000},
    {0, 992, 0, 977, 1000, 992, 438, 566},
    {844, 74, 228, 198, 910, 1000, 322, 930},
    {887, 361, 957, 891, 992, 973, 961, 279},
    {559, 887, 988, 777, 844, 922, 984, 883},
    {918, 898, 0, 551, 797, 1000, 1000, 918},
    {980, 918, 879, 1000, 992, 1000, 969, 1000},
    {1000, 1000, 1000, 566, 930, 922, 918, 984},
    {973, 984, 949, 1000, 805, 996, 1000, 996},
    {1000, 961, 816, 973, 871, 820, 1000, 1000},
    {926, 1000, 965, 1000, 1000, 891, 812, 961},
    {969, 672, 930, 984, 805, 930, 613, 914},
    {1000, 1000, 1000, 969, 992, 980, 1000, 984},
    {938, 934, 801, 988, 977, 1000, 871, 1000},
    {1000, 922, 1000, 809, 1000, 828, 1000, 1000},
    {1000, 926, 1000, 938, 922, 1000, 1000, 891},
    {969, 1000, 953, 926, 875, 961, 1000, 957},
    {684, 1000, 883, 1000, 898, 980, 781, 949},
    {984, 734, 941, 957, 219, 961, 750, 988},
    {996, 863, 1000, 984, 949, 980, 992, 338},
    {965, 719, 941, 1000, 852, 914, 867, 887},
    {949, 961, 883, 996, 797, 1000, 855, 980},
    {1000, 1000, 359, 973, 703, 988, 984, 586},
    {828, 883, 582, 816, 988, 992, 1000, 0},
    {930, 992, 582, 1000, 977, 844, 926, 922},
    {992, 852, 727, 992, 930, 766, 828, 984},
    {703, 996, 738, 922, 941, 1000, 1000, 961},
    {973, 734, 926, 980, 984, 957, 1000, 879},
    {762, 691, 1000, 79, 996, 992, 1000, 1000},
    {984, 1000, 996, 1000, 1000, 996, 1000, 1000},
    {891, 938, 848, 543, 902, 977, 832, 930},
};

/* MInference budgets: the five stored (vertical, slash) pairs of the file, with the median
 * of the fourth value (the share of attention mass the mask kept) over their heads. */
static const struct salca_calib_pattern patterns[5] = {
    {'A', 30, 800, 0.98057},    /* 202 heads */
    {'B', 100, 800, 0.93359},   /* 319 heads: the A-shape (streaming) search candidate */
    {'C', 500, 700, 0.97719},   /* 149 heads */
    {'D', 1000, 6096, 0.91120}, /* 218 heads: block-sparse, stored as 1000/6096 */
    {'E', 3500, 100, 0.96904},  /* 136 heads */
};

/* The pattern of each (layer, query head) of the file, by code. */
static const char *const minf_pattern[SALCA_CAL_LAYERS] = {
    "DDDDDDDDDDDDDDDDDDDDDDDDDDDDDEEE", "ACDCAAAAADACDAAAAAAAAAADACAADDAA",
    "AAADAABAAAAAAABDAAADDDDDABBAAAAA", "DDBDAAAAAAAABACAAAAACBDAADABABAA",
    "BAAAAADABAAAAAABDDDDBDADAAAADBAA", "ADAAABABDDDDAAAABDDABDBBDAADAAAA",
    "AABBAABAAAAAAAAAAAAABDBABDDBBBBB", "AAABAADDAAAAAAABBABABEDBBDBBAAAA",
    "DDBBADABDDBDBABBADDDAAAABBDDBDDD", "DDDDDDDDCAACBBBDBEABDDDBCDBDDDBD",
    "DDDECDDDBAAADDDACBEDCCCCDBDBBBCD", "DDDDBBBBBCCCDBBECCCCBBDBCCCCEEBD",
    "CDCBBBBBCCBBCCBBCECCABCDCCCCCBAB", "EBDDDDDBDBBBBBBBDEEBEEBEBBBBACDD",
    "EBBEBEBCCCCCBDBBBBBDDBBBDDABBDDD", "ADDEBDCCCCBBCBBBBDDBBBBBBBBBDDDA",
    "EDBDEDEDEDEBCCCCBCEBDBBDBBBECCAC", "CCBCCCBCDBECCEBDDDDDCDBBBBEBDDCE",
    "EBEBEBECEECCBCBCBBDDEBBBDBCBBBBB", "BBDDDDDDCBCABBBEBCCBBBBBCBDBCCCC",
    "BBBBCDDDCBBBBEBBDDDDDBCEDBDBCBBB", "BBBBACCABCCDEEEBBCBCDBEEEBEBDEEE",
    "EEEBBCEEBBBBDBBBCCCCCCCBBCBCEBBE", "BBBBEEEBBBEEEEEBCBBCEEEEBBEECCCC",
    "BEBEDEEECAACBBACEEEEDEEEEEBBECCE", "EBEEEDEEBCBBEDDDBBEDAAAACBCBCCCC",
    "BBBBBBEEBCEBDDDDDBDEABABBCBEBEBE", "CBBCDDDDBCBAEECCECBEDDDDCACCBABB",
    "BBBBAAAABBBADEDBEBBBECCEEEAEBBBC", "BBBCBDCBBBABBCCCBBBBDEEBAAAAECEE",
    "CEEEDBBABECEEBEEDBBBEEACBBBEBEEB", "AAACAACBAAAAAADABEABEEBAAAAABBBB",
};

const struct salca_calib_pattern *salca_calib_pattern(uint32_t ml, uint32_t mh)
{
    return &patterns[minf_pattern[ml % SALCA_CAL_LAYERS][mh % SALCA_CAL_Q_HEADS] - 'A'];
}

double salca_calib_gate(uint32_t ml, uint32_t mg)
{
    return duo_gate_milli[ml % SALCA_CAL_LAYERS][mg % SALCA_CAL_KV_HEADS] / 1000.0;
}

bool salca_calib_retrieval(uint32_t ml, uint32_t mg, double retrieval_frac)
{
    uint32_t me = ml * SALCA_CAL_KV_HEADS + mg, ahead = 0;
    unsigned mine = duo_gate_milli[ml][mg];
    for (uint32_t i = 0; i < SALCA_CAL_LAYERS * SALCA_CAL_KV_HEADS; i++) {
        unsigned gi = duo_gate_milli[i / SALCA_CAL_KV_HEADS][i % SALCA_CAL_KV_HEADS];
        ahead += gi > mine || (gi == mine && i < me);
    }
    /* rank (0-based) below the number of retrieval heads, round(frac * 256) */
    return ahead < (uint32_t)floor(retrieval_frac * SALCA_CAL_LAYERS * SALCA_CAL_KV_HEADS + 0.5);
}

double salca_calib_boost(const struct salca_calib_pattern *pt, const struct salca_calib_params *p)
{
    double b = (double)(pt->vertical + pt->slash) / p->search_tokens;
    if (b > 0.999)
        b = 0.999;
    double m = pt->mass, s = p->logit_std;
    return log(m / (1 - m)) - log(b / (1 - b)) + 0.5 * s * s;
}

int salca_calib_check_dims(uint32_t L, uint32_t H, uint32_t G, struct errmsg *e)
{
    if (!L || !G || !H || L > SALCA_CAL_LAYERS || G > SALCA_CAL_KV_HEADS || H % G ||
        H / G > SALCA_CAL_Q_HEADS / SALCA_CAL_KV_HEADS)
        return errmsg_set(e, ERR_USAGE,
                          "calibrated source maps onto Llama-3.1-8B: needs 1..32 layers, 1..8 "
                          "KV heads and 1..4 query heads per KV head (got %u layers, %u heads, "
                          "%u KV heads)",
                          L, H, G);
    return 0;
}

uint32_t salca_calib_model_layer(uint32_t l, uint32_t L)
{
    return l * SALCA_CAL_LAYERS / L;
}

uint32_t salca_calib_model_kv(uint32_t g, uint32_t G)
{
    return g * SALCA_CAL_KV_HEADS / G;
}

uint32_t salca_calib_model_q(uint32_t h, uint32_t H, uint32_t G)
{
    uint32_t hpg = H / G, qpg = SALCA_CAL_Q_HEADS / SALCA_CAL_KV_HEADS;
    return salca_calib_model_kv(h / hpg, G) * qpg + (h % hpg) * qpg / hpg;
}
