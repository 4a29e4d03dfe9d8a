// Row softmax of a 64 x 256 f32 matrix: 4 programs (one per core), 16 rows each.
// One 16 KiB tile per program; the per-row max and sum live in a 16-element column that the
// vector operands broadcast along the row (operand ub[stat, 1, 0]: row stride 1, column
// stride 0), and the division is one reciprocal of 16 sums plus a multiply.
//
// expected cycles: 1475
//
// Every core does the same work on distinct rows (all first-touch DDR reads), so the launch
// takes one core's time. Costs on ascend910b (rows = 16, cols = 256 f32 = 4 repeats per row):
//   block_idx, mul (scalar issue)                                  2
//   GM -> UB 16 KiB: 200 + 16384/32 (lands at 714)               712
//   set MTE2->V (on MTE2 at 514, fires when the tile lands), wait  1
//   vreduce.max: 16 x 4 repeats + log2(256) = 8 steps             72
//   vsub with the row max broadcast: 16 x 4                       64
//   vexp: 16 x 4 repeats x 2 cycles                              128
//   vreduce.sum: 64 + 8                                           72
//   vrecip of 16 f32 (64 B): 1 repeat x 2 cycles                   2
//   vmul by 1/sum: 64                                             64
//   set V->MTE3, wait                                              2
//   UB -> GM 16 KiB: 100 + 16384/64 (until it lands)             356
//   2 + 712 + 1 + 72 + 64 + 128 + 72 + 2 + 64 + 2 + 356 =       1475
.kernel softmax_rows
.gm x f32 [64, 256] init=random seed=3
.gm y f32 [64, 256] init=zeros
.grid 4
.buffer tile ub 0 16384           // 16 rows x 256 f32
.buffer stat ub 16384 64          // one f32 per row (max, then sum, then 1/sum)
    block_idx s0
    mul s1, s0, 16384                                   // byte offset of this program's 16 rows
    mov.gm.ub ub[tile], x[s1], 1, 16384, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vreduce.max.f32 ub[stat], ub[tile], 256, rows=16    // m[r] = max_c x[r, c]
    vsub.f32 ub[tile], ub[tile], ub[stat, 1, 0], 256, rows=16   // x - m[:, None]
    vexp.f32 ub[tile], ub[tile], 256, rows=16
    vreduce.sum.f32 ub[stat], ub[tile], 256, rows=16    // s[r] = sum_c e[r, c]
    vrecip.f32 ub[stat], ub[stat], 16                   // 1 / s: 16 divisions instead of 4096
    vmul.f32 ub[tile], ub[tile], ub[stat, 1, 0], 256, rows=16
    set_flag V, MTE3, 0
    wait_flag V, MTE3, 0
    mov.ub.gm y[s1], ub[tile], 1, 16384, 0, 0
