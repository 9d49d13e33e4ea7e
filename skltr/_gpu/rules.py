"""The rule kernels of ``OnDemandRuleRanker`` on the GPU: every itemset of a document's items,
counted by AND + popcount of bitmaps, one prefix bitmap shared by all its extensions.

Itemsets of size ``s`` are a prefix of ``s - 1`` items and one item after it. Prefixes are
numbered by the combinadic (``skltr._cpu.combinadic``: lexicographic ranks), so a launch
splits every document's prefixes evenly over thread blocks without enumerating them::

    grid (chunk, document):  block = CHUNK consecutive prefix ranks of one document
    per batch of BATCH prefixes (the next-combination step from one unranked start):
        warp b:   prefix bitmap  pbm[b][w] = AND of its items' bitmaps  (shared memory)
                  and its support (popcount, warp reduction); below min_support the
                  prefix has no extension to count (supports only shrink)
        threads:  one per (prefix, next item): per level, popcount(pbm & item bitmap)
                  over the level's words -> counts, support -> the rules X -> level
                  (count >= min_support, count / support >= min_confidence), added to
                  per-thread sums
    end:      warp reductions, then 64-bit integer atomics into the document's row

Every new itemset costs one AND + popcount per word against its prefix, which is what the
CPU's itemset cache buys; here the prefix is built once per batch in shared memory and read
by all its extensions, so no global hash table is needed. The sums are integers (rule
counts, fixed-point confidences ``skltr._cpu.rules.confidence_fixed``, digests mod 2**64),
so the statistics equal the CPU kernels' exactly, in any order.

Itemsets of up to 3 items go to a second kernel, ``triples``, where it applies (compute
capability 8.0, at most :data:`TRIPLE_MAX_LEVELS` levels, fewer than 2**16 training documents,
the bitmaps in shared memory): for a first item ``a``, the counts of every ``(b, c)`` after it
in level ``q`` are a binary matrix product over the level's words, ``count[b][c] = popc(A & B &
C)``, which the tensor cores compute 16 x 8 at a time (``mma.m16n8k256 .and.popc``)::

    usable_items: each document's usable items first (a warp a document)
    grid (chunk of A_CHUNK first items a, document), chunk-major:
        stage the bitmaps of the document's items from the chunk's first on (each level padded
        to 256 bits, rows 16 x an odd number of bytes apart: ldmatrix hits 32 banks); the
        first chunk also two virtual items every training document holds, whose first a
        makes the itemsets of 1 and 2 items
        the chunk's (a, 16 b x 8 CT c tile with some c > b), to the warps in turn: per level,
                ldmatrix + one mma per 256 bits (a's bitmap masking the c or b fragment)
                -> every (b, c)'s counts in registers -> the rules (one record a support:
                least count, confidence in 32-bit integers), summed per thread without
                branches
        end:    warp sums, one 64-bit atomic per (document, level)

Where its time goes and how it got there: ``docs/user_guide/rule_ranker.rst``.

This module is the CUDA source and its launch function, :func:`count_itemsets`; the back-end
that holds the model's arrays on the GPUs, splits a call's documents into rounds and over GPUs
and returns the statistics is :class:`skltr._rules.kernels_cuda.GPURuleKernels`. Kernels
only: nothing here imports the engines (the model comes in as arrays).
"""

from __future__ import annotations

import functools

import cupy
import numpy as np

from .._cpu.rules import CONFIDENCE_TABLE_MAX_TRAIN
from ._compile import module

__all__ = ["A_CHUNK", "BATCH", "CHUNK", "CT", "GROUP", "MAX_SHARED_BYTES", "STAGE", "THREADS",
           "TRIPLES", "count_itemsets", "prefix_batch", "too_many_words_message",
           "triples_shared_bytes"]

#: Prefixes built together in shared memory (a warp each): enough extensions to keep the
#: block's threads busy (8 measured 2x slower at size 3); at most 32 (one warp's scan).
#: Fewer when their lists would not fit in shared memory (:func:`prefix_batch`).
BATCH = 32
#: Prefix ranks of one block for itemsets of up to 3 items, 4x that beyond (longer prefixes
#: have fewer extensions each). Measured at 136 items x 7,337 training documents on an H100,
#: a query of 120 documents: size 3 in 9.1 / 8.5 / 9.3 ms with 256 / 1,024 / 4,096; size 4
#: in 225 / 194 / 187 / 188 ms with 256 / 1,024 / 4,096 / 16,384.
CHUNK = 1024
#: Stage the document's item bitmaps in shared memory (when they fit): 10.4 vs 13.4 ms a
#: query at size 3 read from global memory instead.
STAGE = True
#: Next items a thread counts against one prefix (each prefix word read serves them all):
#: 2 measured fastest at 136 items x 7,337 training documents on an H100 (size 3: 10.4 ms a
#: query of 120 documents, against 12.1 with 4 and 10.3 with 1; size 4: 354 ms, 415 with 4).
GROUP = 2
#: Threads of a block.
THREADS = 512
#: Shared memory a block may take (Hopper: 227 KiB): the document's item bitmaps are staged
#: there when they fit, else read from global memory.
MAX_SHARED_BYTES = 227 * 1024
#: Count itemsets of 3 items with the ``triples`` kernel (binary tensor-core products) where
#: it applies (:func:`triples_shared_bytes`), instead of ``itemsets``.
TRIPLES = True
#: First items ``a`` a ``triples`` block takes (its document's bitmaps from ``a`` on are
#: staged once for all of them). Measured at 136 items x 7,337 training documents on an
#: H200, a query of 120 documents, 512 threads, ``CT = 1``: the kernel in 1.00 / 0.89 / 0.84 /
#: 0.86 ms with 8 / 16 / 32 / 64 (blocks run chunk-major: every document's first chunk, the
#: most itemsets, first).
A_CHUNK = 32
#: Threads of a ``triples`` block, and 8-column tiles of ``c`` a warp computes against one
#: 16-row tile of ``b`` (each ``b`` fragment then serves ``CT`` products; at most 2, which the
#: zero rows after the staged bitmaps, ``PAD_ROWS``, cover). Same measurement, ``A_CHUNK =
#: 32``: ``CT = 2`` 0.75-0.82 ms against 0.84-0.92 with 1; 768 threads with ``CT = 1``
#: 0.77-0.85 (the registers, capped at 80, spill a little; ``CT = 2`` spills far more).
#: The rework of this kernel (ldmatrix fragments, one record load and branchless 32-bit sums
#: an itemset, no division a tile) took it from 834 to 451 million warp instructions and 2.11
#: to 0.85 ms (``ncu``, ``A_CHUNK = 32``, ``CT = 1``).
TRIPLE_THREADS = 512
CT = 2
PAD_ROWS = 16
#: Levels up to which ``triples`` applies (it holds every level's counts of a tile in
#: registers: ``4 * CT`` a level and thread).
TRIPLE_MAX_LEVELS = 8
#: Bit of a ``triples`` record's first word where the least count starts
#: (:func:`triples_rule_table`).
RULE_LEAST_SHIFT = 44

_SOURCE = r"""
#define FULL_MASK 0xffffffffu
#define M1 0x9E3779B97F4A7C15ull
#define M2 0xBF58476D1CE4E5B9ull
#define M3 0x94D049BB133111EBull
#define M4 0xD6E8FEB86659FD93ull

__device__ __forceinline__ u64 splitmix64(u64 x) {      // skltr._cpu.rules.splitmix64
    u64 z = x + M1;
    z = (z ^ (z >> 30)) * M2;
    z = (z ^ (z >> 27)) * M3;
    return z ^ (z >> 31);
}

__device__ __forceinline__ i64 confidence_fixed(i64 c, i64 sup, double rinv, int shift) {
    // skltr._cpu.rules.confidence_fixed, (c << shift) // sup, without a 64-bit division: the
    // double estimate is within 1 of the quotient (it is below 2**41), the remainder fixes it
    const i64 num = c << shift;
    i64 q = (i64)floor((double)c * rinv * (double)(1LL << shift));
    i64 r = num - q * sup;
    while (r < 0) { --q; r += sup; }
    while (r >= sup) { ++q; r -= sup; }
    return q;
}

__device__ void unrank(i64 r, int m, int k, const i64* binom, int bk, int* out) {
    // skltr._cpu.combinadic.unrank; binom[n * bk + j] = C(n, j)
    int x = 0;
    for (int i = 0; i < k; ++i) {
        while (true) {
            const i64 block = binom[(i64)(m - x - 1) * bk + (k - i - 1)];
            if (r < block) { out[i] = x; ++x; break; }
            r -= block; ++x;
        }
    }
}

__device__ bool next_combination(int* c, int k, int m) {
    // the lexicographic successor of c[:k] among k-combinations of 0..m-1
    int i = k - 1;
    while (i >= 0 && c[i] == m - k + i) --i;
    if (i < 0) return false;
    ++c[i];
    for (int j = i + 1; j < k; ++j) c[j] = c[j - 1] + 1;
    return true;
}

extern "C" __global__ void usable_items(
        const unsigned char* __restrict__ codes, int n_docs, int n_cols,
        const int* __restrict__ usable, int* __restrict__ doc_items, int* __restrict__ doc_m) {
    // each document's items that a rule can hold (usable[c * 256 + code] >= 0), first and in
    // column order (as the CPU walks them), and how many: a warp a document
    const i64 d = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (d >= n_docs) return;
    int count = 0;
    for (int c0 = 0; c0 < n_cols; c0 += 32) {
        const int c = c0 + lane;
        const int item = c < n_cols ? usable[c * 256 + codes[d * n_cols + c]] : -1;
        const unsigned ok = __ballot_sync(FULL_MASK, item >= 0);
        if (item >= 0) doc_items[d * n_cols + count + __popc(ok & ((1u << lane) - 1u))] = item;
        count += __popc(ok);
    }
    if (lane == 0) doc_m[d] = count;
}

extern "C" __global__ void itemsets(
        const u64* __restrict__ item_bits, int n_words, const u64* __restrict__ all_bits,
        const i64* __restrict__ level_word_ptr, const int* __restrict__ doc_items,
        const int* __restrict__ doc_m, int n_cols, const u64* __restrict__ item_key,
        int s, const i64* __restrict__ binom, int bk, i64 chunk, i64 n_chunks,
        i64 min_support, const i64* __restrict__ min_count, int shift,
        i64* __restrict__ n_rules,
        i64* __restrict__ conf_sum, u64* __restrict__ digest) {
    // itemsets of size s of one document whose (s-1)-prefix ranks are this block's chunk
    extern __shared__ __align__(16) unsigned char smem[];
    const int stride = n_words | 1;                          // odd: no bank conflicts
    u64* stage = (u64*)smem;                                 // STAGE: [m][stride] bitmaps
    u64* cv = stage + (STAGE ? (i64)n_cols * stride : 0);    // [BATCH][n_words] non-zero
    int* cw = (int*)(cv + BATCH * n_words);                  //   words of each prefix, and
    unsigned char* ext_b = (unsigned char*)(cw + BATCH * n_words);   // (each group's prefix)
    __shared__ int n_nz[BATCH];                              //   their indices, and where
    __shared__ int nz_lo[BATCH][NLEV + 1];                   //   each level starts among them
    __shared__ int comb[BATCH][KMAX + 1];                    // prefixes (item positions)
    __shared__ i64 psup[BATCH];
    __shared__ u64 pkey[BATCH];
    __shared__ int cur[KMAX + 1];
    __shared__ int n_ext[BATCH + 1];                         // extensions before prefix b
    __shared__ int nb;
    __shared__ i64 lwp[NLEV + 1];
    const i64 d = (i64)blockIdx.x / n_chunks, chunk_id = (i64)blockIdx.x % n_chunks;
    const int p = s - 1;
    const int m = doc_m[d];
    const int* items = doc_items + d * n_cols;
    if (s > m) return;
    const i64 n_prefix = binom[(i64)m * bk + p];
    const i64 r0 = chunk_id * chunk;
    if (r0 >= n_prefix) return;
    const i64 r1 = min(n_prefix, r0 + chunk);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x <= NLEV) lwp[threadIdx.x] = level_word_ptr[threadIdx.x];
    if (STAGE)
        for (i64 k = threadIdx.x; k < (i64)m * n_words; k += blockDim.x) {
            const i64 j = k / n_words, w = k - j * n_words;
            stage[j * stride + w] = item_bits[(i64)items[j] * n_words + w];
        }
    i64 my_rules[NLEV], my_conf[NLEV];
    u64 my_dig[NLEV];
    for (int l = 0; l < NLEV; ++l) { my_rules[l] = 0; my_conf[l] = 0; my_dig[l] = 0; }
    if (threadIdx.x == 0) unrank(r0, m, p, binom, bk, cur);
    for (i64 base = r0; base < r1; base += BATCH) {
        __syncthreads();                                     // the last batch is done with
        const int k = (int)min((i64)BATCH, r1 - base);
        if ((int)threadIdx.x < k) {                          // prefix b of the batch: b
            const int b = threadIdx.x;                       // successors of its start,
            int* c = comb[b];                                // the last item stepping fast
            for (int i = 0; i < p; ++i) c[i] = cur[i];
            int left = b;
            while (p && left > 0) {
                const int room = m - 1 - c[p - 1];
                if (left <= room) { c[p - 1] += left; break; }
                left -= room + 1;                            // to the last item's end, then
                c[p - 1] = m - 1;                            // one lexicographic step
                next_combination(c, p, m);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {                              // the next batch's start
            nb = k;
            for (int i = 0; i < p; ++i) cur[i] = comb[k - 1][i];
            if (base + k < r1) next_combination(cur, p, m);
        }
        for (int b = warp; b < k; b += blockDim.x >> 5) {    // a warp per prefix: its
            i64 sup = 0;                                     // non-zero words, in order
            int count = 0;
            for (int w0 = 0; w0 < n_words; w0 += 32) {
                const int w = w0 + lane;
                u64 v = 0;
                if (w < n_words) {
                    v = all_bits[w];
                    for (int i = 0; i < p; ++i)
                        v &= STAGE ? stage[(i64)comb[b][i] * stride + w]
                                   : item_bits[(i64)items[comb[b][i]] * n_words + w];
                }
                const unsigned nz = __ballot_sync(FULL_MASK, v != 0);
                const int at = count + __popc(nz & ((1u << lane) - 1u));
                if (v != 0) {
                    cv[b * n_words + at] = v;
                    cw[b * n_words + at] = w;
                }
                for (int l = 1; l < NLEV; ++l)
                    if (w == lwp[l]) nz_lo[b][l] = at;               // non-zero words before
                count += __popc(nz);
                sup += __popcll(v);
            }
            for (int o = 16; o > 0; o >>= 1) sup += __shfl_xor_sync(FULL_MASK, sup, o);
            if (lane == 0) {
                u64 key = 0;
                for (int i = 0; i < p; ++i) key += item_key[items[comb[b][i]]];
                pkey[b] = key;
                psup[b] = sup;
                n_nz[b] = count;
                nz_lo[b][0] = 0;
                nz_lo[b][NLEV] = count;
            }
        }
        __syncthreads();
        if (warp == 0) {                                     // extensions: the items after a
            int v = 0;                                       // prefix's last, GROUP a thread;
            if (lane < nb) {                                 // their prefix sum (BATCH <= 32)
                const int first = p ? comb[lane][p - 1] + 1 : 0;
                v = psup[lane] >= min_support ? (m - first + GROUP - 1) / GROUP : 0;
            }
            for (int o = 1; o < 32; o <<= 1) {
                const int u = __shfl_up_sync(FULL_MASK, v, o);
                if (lane >= o) v += u;
            }
            if (lane < nb) n_ext[lane + 1] = v;
            if (lane == 0) n_ext[0] = 0;
        }
        __syncthreads();
        for (int b = warp; b < nb; b += blockDim.x >> 5)     // each group's prefix, at hand
            for (int e = n_ext[b] + lane; e < n_ext[b + 1]; e += 32) ext_b[e] = (unsigned char)b;
        __syncthreads();
        for (int e = threadIdx.x; e < n_ext[nb]; e += blockDim.x) {
            // a thread per GROUP consecutive next items of one prefix: each prefix word read
            // once serves them all
            const int b = ext_b[e];
            const int pos0 = (p ? comb[b][p - 1] + 1 : 0) + (e - n_ext[b]) * GROUP;
            const int ng = min(GROUP, m - pos0);
            const u64* ib[GROUP];
            #pragma unroll
            for (int g = 0; g < GROUP; ++g) {
                const int pos = min(pos0 + g, m - 1);    // past the end: a copy, ignored
                ib[g] = STAGE ? stage + (i64)pos * stride : item_bits + (i64)items[pos] * n_words;
            }
            const u64* pv = cv + b * n_words;
            const int* pw = cw + b * n_words;
            int cnt[GROUP][NLEV];
            #pragma unroll
            for (int q = 0; q < NLEV; ++q) {
                int c[GROUP];
                #pragma unroll
                for (int g = 0; g < GROUP; ++g) c[g] = 0;
                for (int j = nz_lo[b][q]; j < nz_lo[b][q + 1]; ++j) {
                    const u64 v = pv[j];
                    const int w = pw[j];
                    #pragma unroll
                    for (int g = 0; g < GROUP; ++g) c[g] += __popcll(v & ib[g][w]);
                }
                #pragma unroll
                for (int g = 0; g < GROUP; ++g) cnt[g][q] = c[g];
            }
            #pragma unroll
            for (int g = 0; g < GROUP; ++g) {
                if (g >= ng) break;
                i64 sup = 0;
                #pragma unroll
                for (int q = 0; q < NLEV; ++q) sup += cnt[g][q];
                if (sup < min_support) continue;
                const u64 key = pkey[b] + item_key[items[pos0 + g]];
                const double rinv = 1.0 / (double)sup;           // one division an itemset
                const i64 least = min_count[sup];                // skltr._cpu.rules.min_counts
                #pragma unroll
                for (int q = 0; q < NLEV; ++q) {
                    const i64 c = cnt[g][q];
                    if (c >= least) {
                        my_rules[q] += 1;
                        my_conf[q] += confidence_fixed(c, sup, rinv, shift);
                        if (DIGEST) my_dig[q] += splitmix64(key ^ ((u64)(q + 1) * M4));
                    }
                }
            }
        }
    }
    for (int q = 0; q < NLEV; ++q) {                         // warp sums, then one atomic each
        i64 a = my_rules[q], c = my_conf[q];
        u64 g = my_dig[q];
        for (int o = 16; o > 0; o >>= 1) {
            a += __shfl_xor_sync(FULL_MASK, a, o);
            c += __shfl_xor_sync(FULL_MASK, c, o);
            g += __shfl_xor_sync(FULL_MASK, g, o);
        }
        if (lane == 0 && a) {
            atomicAdd((unsigned long long*)&n_rules[d * NLEV + q], (unsigned long long)a);
            atomicAdd((unsigned long long*)&conf_sum[d * NLEV + q], (unsigned long long)c);
            if (DIGEST) atomicAdd((unsigned long long*)&digest[d * NLEV + q], g);
        }
    }
}

__device__ __forceinline__ void mma_and_popc(int* acc, const u32* a, const u32* b) {
    // acc (16 x 8, s32) += popc(A & B) over 256 bits: A 16 x 256 (row), B 256 x 8 (col);
    // binary mma needs compute capability 8.0 (the host launches triples only there)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();
#endif
}

__device__ __forceinline__ void ldsm_x4(u32* r, u32 addr) {
    // four 8 x 128-bit matrices from shared memory, lane l giving row l % 8 of matrix l / 8
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldsm_x2(u32* r, u32 addr) {
    // two 8 x 128-bit matrices (lanes 0-15 give the rows)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

extern "C" __global__ void __launch_bounds__(TRIPLE_THREADS) triples(
        const u64* __restrict__ item_bits, int n_words, const i64* __restrict__ level_word_ptr,
        const int* __restrict__ doc_items, const int* __restrict__ doc_m, int n_cols,
        const u64* __restrict__ item_key, int a_chunk, i64 n_chunks, int kstride, int small,
        const longlong2* __restrict__ rule_table,
        i64* __restrict__ n_rules, i64* __restrict__ conf_sum, u64* __restrict__ digest) {
    // itemsets of 3 items {a, b, c} of one document whose first item a is at a position in
    // this block's chunk [ia0, ia0 + a_chunk): for each a, the counts of every (b, c) in every
    // level are the binary matrix product popc(A & B & C) on the tensor cores
    extern __shared__ __align__(16) unsigned char smem[];
    u64* rows = (u64*)smem;                              // [n_st + PAD_ROWS][kstride] bitmaps
    __shared__ int koff[NLEV + 1];                       // level q: words [koff[q], koff[q+1])
    __shared__ i64 lwp[NLEV + 1];
    // chunk-major: every document's first chunk (the most itemsets) is scheduled first, the
    // small last chunks fill the tail
    const i64 n_docs = (i64)gridDim.x / n_chunks;
    const i64 chunk_id = (i64)blockIdx.x / n_docs, d = (i64)blockIdx.x % n_docs;
    const int m = doc_m[d];
    const int ia0 = (int)chunk_id * a_chunk;
    const int ia1 = min(ia0 + a_chunk, m - 2);          // a needs two items after it
    // with ``small``, a document's first chunk also counts its itemsets of 1 and 2 items:
    // those of 3 whose a (and b) is a virtual item every training document holds, at
    // positions -2 and -1 (a = -2 only: b = -1 makes the single c, b >= 0 the pair b, c)
    const int virt = small && chunk_id == 0 && m >= 1 ? 2 : 0;
    if (ia0 >= ia1 && !virt) return;
    const int p0 = ia0 - virt;                           // staged: positions p0 .. m - 1
    const int* items = doc_items + d * n_cols;
    const int n_st = m - p0;
    u64* skey = rows + (i64)(n_st + PAD_ROWS) * kstride; // [n_st] their item keys
    if (threadIdx.x <= NLEV) lwp[threadIdx.x] = level_word_ptr[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {                              // each level padded to 256 bits
        koff[0] = 0;
        for (int q = 0; q < NLEV; ++q)
            koff[q + 1] = koff[q] + (int)(((lwp[q + 1] - lwp[q]) + 3) & ~3LL);
    }
    __syncthreads();
    const int kt = koff[NLEV];
    for (i64 k = threadIdx.x; k < (i64)(n_st + PAD_ROWS) * kt; k += blockDim.x) {
        const int r = (int)(k / kt), w = (int)(k - (i64)r * kt);
        u64 v = 0;
        if (r < n_st) {
            int q = 0;
            while (w >= koff[q + 1]) ++q;
            const i64 wl = w - koff[q];
            if (wl < lwp[q + 1] - lwp[q])
                v = r < virt ? ~0ull : item_bits[(i64)items[p0 + r] * n_words + lwp[q] + wl];
        }
        rows[(i64)r * kstride + w] = v;                  // padding rows and words: zeros
    }
    for (int r = threadIdx.x; r < n_st; r += blockDim.x)
        skey[r] = r < virt ? 0ull : item_key[items[p0 + r]];
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, tig = lane & 3;             // the mma fragments' row / k slice
    // The fragments of a 256-bit step come from ldmatrix (8 rows of 16 bytes a matrix, row g's
    // 32-bit word tig to lane (g, tig): the b1 fragments' layout); rows are 16 x an odd
    // number of bytes apart, so a matrix's 8 rows hit 32 banks.
    const u32 srows = (u32)__cvta_generic_to_shared(rows);
    //
    // Sums a thread keeps: rules and confidence parts in 32 bits (a rule adds at most
    // count * D / 2**32 <= 2**(shift - 32) <= 2**8 to hi and less than its count, below the
    // training documents' count, to lo32), the 64-bit part count * (D mod 2**32) in 64 bits.
    // The host keeps a block's first items few enough that the 32-bit sums stay below 2**32
    // (_a_chunk).
    u32 my_rules[NLEV], my_hi[NLEV], my_lo32[NLEV];
    u64 my_lo[NLEV], my_dig[NLEV];
    #pragma unroll
    for (int l = 0; l < NLEV; ++l) {
        my_rules[l] = 0; my_hi[l] = 0; my_lo32[l] = 0; my_lo[l] = 0; my_dig[l] = 0;
    }
    // The block's tiles, a at a time and in each row of 16 b those with some c > b, go to its
    // warps in turn: ``phase`` is how many tiles from here this warp's next one is.
    int phase = warp;
    for (int ia = ia0 - virt; ia < ia1; ia += ia == -2 ? 2 : 1) {
        const int base = ia - p0 + 1;                    // row of the first item after a
        const int n_ext = m - 1 - ia;                    // b, c: 0 .. n_ext - 1 after a
        const int nb = (n_ext + 15) >> 4, ns = (n_ext + 8 * CT - 1) / (8 * CT);
        // a's bitmap for every lane's rows: bits 0-127 (lanes 0-7), 128-255 (8-15)
        const u32 sm = srows + (u32)((ia - p0) * kstride * 8 + ((lane >> 3) & 1) * 16);
        const u64 key_a = skey[ia - p0];
        for (int bt = 0; bt < nb; ++bt) {
            const int b0 = bt * 16;
            int st = (b0 + 1) / (8 * CT) + phase;        // the first tile with a c > b
            for (; st < ns; st += N_WARPS) {             // a warp per 16 b x 8 CT c tile
                const int c0 = st * 8 * CT;
                // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8. A: b rows
                // 0-7, 8-15 (a0, a1), then their bits 128-255 (a2, a3); B: c rows 0-7 (and
                // 8-15 for CT = 2), bits 0-127 then 128-255, fragment by fragment
                const u32 sa = srows + (u32)((base + b0 + (lane & 7) + ((lane >> 3) & 1) * 8)
                                             * kstride * 8 + (lane >> 4) * 16);
                const u32 sb = srows + (u32)((base + c0 + (lane & 7)
                                              + (CT == 1 ? 0 : (lane >> 4) * 8))
                                             * kstride * 8 + ((lane >> 3) & 1) * 16);
                u32 cnt[NLEV][CT][4];
                #pragma unroll
                for (int q = 0; q < NLEV; ++q) {
                    int acc[CT][4];
                    #pragma unroll
                    for (int ct = 0; ct < CT; ++ct)
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) acc[ct][e] = 0;
                    // shared addresses of this lane's rows at the level's first step: A (b
                    // rows), B (c rows) and a's bitmap, one 256-bit step = 32 bytes on
                    u32 pa = sa + (u32)koff[q] * 8u, pb = sb + (u32)koff[q] * 8u;
                    u32 pm = sm + (u32)koff[q] * 8u;
                    #pragma unroll 2
                    for (int n = (koff[q + 1] - koff[q]) >> 2; n > 0; --n) {
                        u32 fa[4], fb[2 * CT], mk[2];
                        ldsm_x4(fa, pa);
                        ldsm_x2(mk, pm);                 // a's bitmap masks the operand
                        if (CT == 1) {                   // with fewer registers
                            ldsm_x2(fb, pb);
                            fb[0] &= mk[0]; fb[1] &= mk[1];
                        } else {
                            ldsm_x4(fb, pb);
                            fa[0] &= mk[0]; fa[1] &= mk[0]; fa[2] &= mk[1]; fa[3] &= mk[1];
                        }
                        #pragma unroll
                        for (int ct = 0; ct < CT; ++ct) mma_and_popc(acc[ct], fa, fb + 2 * ct);
                        pa += 32u; pb += 32u; pm += 32u;
                    }
                    #pragma unroll
                    for (int ct = 0; ct < CT; ++ct)
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) cnt[q][ct][e] = (u32)acc[ct][e];
                }
                // the tile's itemsets: each one's record (one 16-byte load, all issued before
                // the first is used), then its rules level by level, without branches
                u32 sup[CT][4];
                longlong2 rec[CT][4];
                #pragma unroll
                for (int ct = 0; ct < CT; ++ct)
                    #pragma unroll
                    for (int e = 0; e < 4; ++e) {           // element e: row g (+8), col
                        u32 v = 0;                           // 2 tig (+1)
                        #pragma unroll
                        for (int q = 0; q < NLEV; ++q) v += cnt[q][ct][e];
                        sup[ct][e] = v;
                        rec[ct][e] = rule_table[v];
                    }
                #pragma unroll
                for (int ct = 0; ct < CT; ++ct)
                    #pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int b = b0 + g + (e >> 1) * 8;
                        const int c = c0 + ct * 8 + 2 * tig + (e & 1);
                        // past c's last item the rows are zeros: every count is 0, below any
                        // least count (>= 1); b >= c is no itemset
                        const u64 x = (u64)rec[ct][e].x;
                        const u32 least = b < c ? (u32)(x >> RULE_LEAST_SHIFT) : 0xffffffffu;
                        const u32 d_lo = (u32)x, d_hi = (u32)(x >> 32) & RULE_D_HI_MASK;
                        const u32 R = (u32)rec[ct][e].y, M = (u32)((u64)rec[ct][e].y >> 32);
                        const u32 v = max(sup[ct][e], 1u);   // (0: every count 0)
                        #pragma unroll
                        for (int q = 0; q < NLEV; ++q) {
                            const u32 cq = cnt[q][ct][e];
                            const bool rule = cq >= least;
                            const u32 cr = rule ? cq : 0u;   // 0 adds 0 below
                            // confidence_fixed: floor(cr 2**shift / v) = cr D + floor(cr R
                            // / v), the last a multiply-high by M, its estimate the quotient
                            // or one below
                            const u32 tr = cr * R;
                            u32 fr = __umulhi(tr, M);
                            fr += (tr - fr * v >= v);
                            my_rules[q] += rule;
                            my_lo[q] += (u64)cr * d_lo;
                            my_hi[q] += cr * d_hi;
                            my_lo32[q] += fr;
                            if (DIGEST && rule) {
                                const u64 key = key_a + skey[base + b] + skey[base + c];
                                my_dig[q] += splitmix64(key ^ ((u64)(q + 1) * M4));
                            }
                        }
                    }
            }
            phase = st - ns;                             // past this row's end
        }
    }
    for (int q = 0; q < NLEV; ++q) {                         // warp sums, then one atomic each
        i64 a = my_rules[q];
        i64 c = (i64)(my_lo[q] + ((u64)my_hi[q] << 32) + my_lo32[q]);
        u64 g2 = my_dig[q];
        for (int o = 16; o > 0; o >>= 1) {
            a += __shfl_xor_sync(FULL_MASK, a, o);
            c += __shfl_xor_sync(FULL_MASK, c, o);
            g2 += __shfl_xor_sync(FULL_MASK, g2, o);
        }
        if (lane == 0 && a) {
            atomicAdd((unsigned long long*)&n_rules[d * NLEV + q], (unsigned long long)a);
            atomicAdd((unsigned long long*)&conf_sum[d * NLEV + q], (unsigned long long)c);
            if (DIGEST) atomicAdd((unsigned long long*)&digest[d * NLEV + q], g2);
        }
    }
}
"""


@cupy.memoize(for_each_device=True)
def _module(n_levels, kmax, digest, stage, group, batch, ct, triple_threads):
    return module(_SOURCE, {"NLEV": n_levels, "KMAX": kmax, "DIGEST": digest,
                            "BATCH": batch, "STAGE": stage, "GROUP": group, "CT": ct,
                            "PAD_ROWS": PAD_ROWS, "TRIPLE_THREADS": triple_threads,
                            "N_WARPS": max(1, triple_threads // 32),
                            "RULE_LEAST_SHIFT": RULE_LEAST_SHIFT,
                            "RULE_D_HI_MASK": (1 << (RULE_LEAST_SHIFT - 32)) - 1})


def _triple_stride(level_words):
    """64-bit words a staged bitmap takes in ``triples``: each level's words padded to 256
    bits (one product's k), plus 2, so that rows are 16 x an odd number of bytes apart (the
    8 rows of an ldmatrix hit 32 banks)."""
    return _padded_words(tuple(int(w) for w in level_words)) + 2


@functools.lru_cache(maxsize=64)
def _padded_words(level_words):
    words = np.diff(np.asarray(level_words, np.int64))
    return int(np.sum((words + 3) // 4 * 4))


#: ``(module, name) -> (kernel, dynamic shared memory allowed)`` (:func:`_function`).
_FUNCTIONS = {}


def _function(mod, name, smem):
    """``mod``'s kernel ``name``, allowed at least ``smem`` bytes of dynamic shared memory
    (kept, with the most allowed so far: the lookup and the attribute are host work every
    launch would repeat)."""
    kern, allowed = _FUNCTIONS.get((mod, name), (None, 48 * 1024))
    if kern is None:
        kern = mod.get_function(name)
    if smem > allowed:
        kern.max_dynamic_shared_size_bytes = allowed = smem
    _FUNCTIONS[mod, name] = (kern, allowed)
    return kern


@functools.lru_cache(maxsize=16)
def _compute_capability(device_id):
    return int(cupy.cuda.Device(device_id).compute_capability)


def triples_rule_table(conf_table, min_count):
    """The ``triples`` kernel's record of each support ``s``: ``conf_table``
    (``skltr._cpu.rules.confidence_table``: ``D = 2**shift // s`` and ``(M << 32) | R``) with
    ``min_count[s]`` (``skltr._cpu.rules.min_counts``, the least count of a rule) in the bits
    of ``D`` from :data:`RULE_LEAST_SHIFT` on (``D <= 2**40``; ``min_count <= 2**16``), so that
    one 16-byte load serves an itemset."""
    table = np.array(conf_table, dtype=np.int64, copy=True)
    least = np.asarray(min_count, np.int64)[:table.shape[0]]
    if table[:, 0].max(initial=0) >> RULE_LEAST_SHIFT or least.max(initial=0) >> 19:
        raise ValueError("triples_rule_table: D or the least count out of its bits")
    table[:, 0] |= least << RULE_LEAST_SHIFT
    return table


def triples_shared_bytes(level_words, n_items):
    """Shared memory of a ``triples`` block whose document has ``n_items`` items from its
    chunk's first on: their bitmaps, ``PAD_ROWS`` zero rows and their keys."""
    return (n_items + PAD_ROWS) * _triple_stride(level_words) * 8 + n_items * 8


def _use_triples(level_words, n_items, n_train):
    """Whether ``triples`` counts the itemsets of 3 items: it applies from compute
    capability 8.0 (binary ``mma``), for at most :data:`TRIPLE_MAX_LEVELS` levels and fewer
    than 2**16 training documents (``skltr._cpu.rules.confidence_table``), when a block's
    bitmaps fit in shared memory."""
    return (TRIPLES and 0 < len(level_words) - 1 <= TRIPLE_MAX_LEVELS and CT <= 2
            and int(n_train) < CONFIDENCE_TABLE_MAX_TRAIN
            and _compute_capability(cupy.cuda.Device().id) >= 80
            and triples_shared_bytes(level_words, n_items) <= MAX_SHARED_BYTES)


def _lists_bytes(batch, n_words, n_cols):
    """Shared memory of a batch's prefix lists: each prefix's non-zero words (8 bytes) and
    their indices (4), and each group of next items' prefix (1 byte)."""
    return batch * n_words * 12 + batch * -(-n_cols // GROUP)


def prefix_batch(n_words, n_cols):
    """Prefixes built together: :data:`BATCH`, halved until their lists fit a block's shared
    memory (a large training set: 32 prefixes of 12 bytes a word fit up to ~38,000 training
    documents, one prefix up to ~1.2 million); 0 when even one prefix does not fit."""
    batch = BATCH
    while batch and _lists_bytes(batch, n_words, n_cols) > MAX_SHARED_BYTES:
        batch //= 2
    return batch


def too_many_words_message(n_words, n_cols):
    """Why the GPU kernels refuse a model of ``n_words`` bitmap words and ``n_cols`` item
    columns."""
    most = (MAX_SHARED_BYTES - _lists_bytes(1, 0, n_cols)) // 12 * 64
    return (f"OnDemandRuleRanker on the GPU holds a prefix's bitmap over the training "
            f"documents in a block's shared memory ({MAX_SHARED_BYTES // 1024} KiB): at most "
            f"about {most:,} training documents, and this model has {n_words * 64:,} "
            f"(rounded up to 64). Fit with device='cpu', or on fewer training documents.")


def count_itemsets(codes, usable, m_most, binom_host, out, *, item_bits, all_bits,
                   level_word_ptr, level_words, item_key, binom, min_count, rule_table,
                   n_words, max_rule_size, min_support, shift, digest):
    """Launch the kernels that count every itemset of ``1 .. max_rule_size`` items of each
    document on the current GPU, adding its statistics to ``out`` (device ``(n_rules,
    conf_sum, digest)``, ``(n_docs, n_levels)``, zeroed by the caller). Returns without
    waiting.

    ``codes`` (device uint8, ``(n_docs, n_cols)``): the documents' item codes; ``usable``
    (device int32, ``(n_cols, 256)``): the item of each column's code, -1 where a rule can
    hold none; ``m_most``: no document has more usable items (it sizes the grids);
    ``binom_host``: the host copy of ``binom`` (``skltr._cpu.combinadic.binomials``);
    ``level_words``: the host copy of ``level_word_ptr``. Other keyword arrays are on the
    device: the model's item bitmaps (``(n_items, n_words)``), the OR of its level bitmaps,
    ``level_word_ptr``, ``item_key``, ``min_count`` (``skltr._cpu.rules.min_counts``) and
    ``rule_table`` (:func:`triples_rule_table`). A first kernel, ``usable_items``, puts each
    document's usable items first (in column order); itemsets of 1 to 3 items then go to the
    ``triples`` kernel where :func:`_use_triples` says so, the others to ``itemsets``.
    """
    n_docs, n_cols = codes.shape
    L, K = out[0].shape[1], int(max_rule_size)
    stride = n_words | 1
    batch = prefix_batch(n_words, n_cols)
    if batch == 0:
        raise ValueError(too_many_words_message(n_words, n_cols))
    lists = _lists_bytes(batch, n_words, n_cols)
    stage = STAGE and n_cols * stride * 8 + lists <= MAX_SHARED_BYTES
    smem = (n_cols * stride * 8 if stage else 0) + lists
    mod = _module(L, K, int(digest), int(stage), GROUP, batch, CT, TRIPLE_THREADS)
    doc_all = cupy.empty(n_docs * n_cols + n_docs, cupy.int32)
    doc_items, doc_m = doc_all[:n_docs * n_cols], doc_all[n_docs * n_cols:]
    _function(mod, "usable_items", 0)(
        (-(-n_docs // 8),), (256,),
        (codes, np.int32(n_docs), np.int32(n_cols), usable, doc_items, doc_m))
    n_train = min_count.size - 1
    # itemsets of 1 and 2 items ride in triples' first chunks (two virtual rows) where it
    # applies: one launch for sizes 1-3
    # (launched even when no document has 3 items: its first chunks count those of 1 and 2)
    small = K >= 3 and m_most >= 1 and _use_triples(level_words, m_most + 2, n_train)
    triples = dict(n_docs=n_docs, n_cols=n_cols, item_bits=item_bits,
                   level_word_ptr=level_word_ptr, level_words=level_words, item_key=item_key,
                   rule_table=rule_table, n_words=n_words)
    if small:
        _launch_triples(mod, doc_items, doc_m, m_most, out, small=True, **triples)
    for s in range(4 if small else 1, min(K, m_most) + 1):
        if s == 3 and _use_triples(level_words, m_most, n_train):
            _launch_triples(mod, doc_items, doc_m, m_most, out, small=False, **triples)
            continue
        chunk = CHUNK if s <= 3 else 4 * CHUNK
        n_chunks = -(-int(binom_host[m_most, s - 1]) // chunk)
        _function(mod, "itemsets", smem)(
            (n_docs * n_chunks,), (THREADS,),
            (item_bits, np.int32(n_words), all_bits, level_word_ptr, doc_items, doc_m,
             np.int32(n_cols), item_key, np.int32(s), binom, np.int32(binom_host.shape[1]),
             np.int64(chunk), np.int64(n_chunks), np.int64(min_support), min_count,
             np.int32(shift), *out),
            shared_mem=smem)


def _a_chunk(m_max, n_train):
    """:data:`A_CHUNK`, or fewer first items a ``triples`` block where a thread's 32-bit sums
    could reach 2**32: an ``a`` gives a thread at most ``ceil(tiles / warps)`` tiles of ``4 *
    CT`` itemsets, each adding less than ``n_train`` (and at most 2**8 to the high part)."""
    n = int(m_max) + 1                                   # with the virtual rows' a: b, c
    tiles = -(-n // 16) * -(-n // (8 * CT))
    per_a = -(-tiles // max(1, TRIPLE_THREADS // 32)) * 4 * CT
    most = (2**32 - 1) // (per_a * max(int(n_train), 2**8))
    return max(1, min(A_CHUNK, most))


def _launch_triples(mod, items_d, m_d, m_max, out, *, small, n_docs, n_cols, item_bits,
                    level_word_ptr, level_words, item_key, rule_table, n_words):
    """Launch ``triples``: a block per :data:`A_CHUNK` first items of a document, every
    document's first chunk first; ``small``: the first chunks also count the itemsets of 1
    and 2 items."""
    smem = triples_shared_bytes(level_words, m_max + 2 if small else m_max)
    a_chunk = _a_chunk(m_max, rule_table.shape[0] - 1)
    n_chunks = -(-max(m_max - 2, 1) // a_chunk)
    _function(mod, "triples", smem)((n_docs * n_chunks,), (TRIPLE_THREADS,),
         (item_bits, np.int32(n_words), level_word_ptr, items_d, m_d, np.int32(n_cols),
          item_key, np.int32(a_chunk), np.int64(n_chunks),
          np.int32(_triple_stride(level_words)), np.int32(bool(small)), rule_table, *out),
         shared_mem=smem)
