// Embedding lookup: out[i, :] = table[tokens[i], :] for 32 tokens of a 1024 x 64 f32 table.
// The token ids come into UB first; one gather then moves one 256 B row per token (one
// segment each); repeated tokens — and tokens whose row shares a 512 B line with a row read
// before — come from L2 instead of DDR.
//
// expected cycles: 736
//
// Costs on ascend910b (a transfer's fixed latency is pipelined: its pipe is busy only for the
// beats, the data lands `latency` cycles later, a set_flag fires once it landed):
//   GM -> UB of 32 token ids (128 B = 4 beats): 200 + 4; the ids land at        204
//   gather of 32 rows x 256 B = 32 x 8 beats. Rows r sit in 512 B lines r // 2; in token
//   order the rows 5, 9, 200, 700 and 17 are the first to read their line (lines 2, 4, 100,
//   350, 8): 5 x 8 = 40 beats from DDR at 1 cycle; the other 27 rows (4 shares line 2 with
//   5, 201 line 100 with 200, 16 line 8 with 17, and repeats) are L2 hits:
//   27 x 8 = 216 beats x 32/110 = 62.84 cycles.  200 + ceil(40 + 62.84) =      303
//   (the gather reads the ids on MTE2 after MTE2 wrote them: same pipe, in order, and it
//   waits for them to land, so it starts at 204; its rows land at 507)
//   set MTE2->MTE3 (on MTE2 at 307, under the gather's latency; fires at 507), wait 1
//   UB -> GM 8 KiB: 100 + 8192/64                                              228
//   204 + 303 + 1 + 228 =                                                      736
.kernel embedding_gather
.gm table f32 [1024, 64] init=random seed=6     // 1024 embeddings of 64 f32 = 256 B each
.gm tokens i32 [32] init=[5, 9, 4, 5, 200, 201, 9, 5, 700, 4, 4, 9, 201, 17, 5, 16, 5, 9, 4, 5, 200, 201, 9, 5, 700, 4, 4, 9, 201, 17, 5, 16]
.gm out f32 [32, 64] init=zeros
.buffer idx ub 0 128
.buffer rows ub 1024 8192
    mov.gm.ub ub[idx], tokens[0], 1, 128, 0, 0
    gather.gm.ub ub[rows], table[0], ub[idx], 32, 256, 256, 256    // MTE2 after MTE2: in order
    set_flag MTE2, MTE3, 0
    wait_flag MTE2, MTE3, 0
    mov.ub.gm out[0], ub[rows], 1, 8192, 0, 0
