// Embedding lookup: out[i, :] = table[tokens[i], :] for 32 tokens of a 1024 x 64 f32 table.
// The token ids come into UB first; one gather then moves one 256 B row per token (one
// segment each); the first read of a 512 B line brings the whole line from DDR, and every
// other row read — repeated tokens, and tokens whose row shares a line with a row read
// before — comes from L2.
//
// expected cycles: 781
//
// Costs on ascend910b (a transfer's fixed latency is pipelined: its pipe is busy only for the
// beats, the data lands `latency` cycles later, a set_flag fires once it landed):
//   GM -> UB of 32 token ids (128 B, in one new line: the line's 16 beats from DDR at
//   32 B/cycle): 200 + 16; the ids land at                                       216
//   gather of 32 rows x 256 B = 32 x 8 beats. Rows r sit in 512 B lines r // 2; the rows
//   read touch 5 lines (2, 4, 100, 350, 8), each read for the first time: 5 x 16 = 80 beats
//   from DDR at 1 cycle, which bring the 64 distinct beats of rows 4, 5, 9, 16, 17, 200,
//   201, 700; the other 256 - 64 = 192 beats (the repeats) are L2 hits:
//   192 x 32/110 = 55.85 cycles.  200 + ceil(80 + 55.85) =                       336
//   (the gather reads the ids on MTE2 after MTE2 wrote them: same pipe, in order, and it
//   waits for them to land, so it starts at 216; its rows land at 552)
//   set MTE2->MTE3 (on MTE2 at 352, under the gather's latency; fires at 552), wait 1
//   UB -> GM 8 KiB: 100 + 8192/64                                              228
//   216 + 336 + 1 + 228 =                                                      781
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
