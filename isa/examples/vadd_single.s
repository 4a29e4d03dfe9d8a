// Vector add z = x + y over 32768 f32 on one core: 8 tiles of 4096 elements (16 KiB),
// single-buffered, as Ascend C with BUFFER_NUM = 1 (one UB buffer each for x, y and z).
//
// expected cycles: 10698
//
// Costs on ascend910b (a transfer's fixed latency is pipelined: its pipe is busy only for the
// beats and takes its next instruction then, while the data lands `latency` cycles later; a
// set_flag on the pipe fires when the pipe's transfers have landed):
//   GM -> UB of a 16 KiB tile (MTE2): 200 latency + 512 beats at DDR 32 B/cycle =  712
//                                     (MTE2 busy 512 of them)
//   vadd.f32 of 4096 elements (V):    16384 B / 256 B per repeat               =   64
//   UB -> GM of a tile (MTE3):        100 latency + 16384 B / 64 B per cycle   =  356
//                                     (MTE3 busy 256 of them)
//   set_flag / wait_flag:             1 cycle on their pipe
// MTE2 may refill x and y only after the vadd of the previous tile has read them, so tiles
// follow each other every
//   1 (wait V->MTE2) + 512 (x's beats; its latency overlaps y's beats) + 712 (y, landed)
//   (set MTE2->V runs under y's latency and fires when y lands)
//   + 1 (wait MTE2->V) + 1 (wait MTE3->V) + 64 (vadd) + 1 (set V->MTE2)      = 1292 cycles
// (the store of a tile overlaps the next tile's loads). The first tile's wait starts at cycle
// 3 (issue of set, set, for); the last tile needs 1292 of its period, then
//   set V->MTE3 (1) + wait on MTE3 (1) + store until it lands (356; set MTE3->V runs under its
//   latency and fires when it lands) + final wait on V (1):
//   3 + 7 x 1292 + 1292 + 1 + 1 + 356 + 1                                     = 10698
.kernel vadd_single
.gm x f32 [32768] init=random seed=1
.gm y f32 [32768] init=random seed=2
.gm z f32 [32768] init=zeros
.buffer xb ub 0 16384
.buffer yb ub 16384 16384
.buffer zb ub 32768 16384
    set_flag V, MTE2, 0              // x, y buffers start free
    set_flag MTE3, V, 0              // z buffer starts free
    for s0, 0, 131072, 16384         // s0: byte offset of the tile
      wait_flag V, MTE2, 0
      mov.gm.ub ub[xb], x[s0], 1, 16384, 0, 0
      mov.gm.ub ub[yb], y[s0], 1, 16384, 0, 0
      set_flag MTE2, V, 0
      wait_flag MTE2, V, 0
      wait_flag MTE3, V, 0
      vadd.f32 ub[zb], ub[xb], ub[yb], 4096
      set_flag V, MTE2, 0            // x, y free again
      set_flag V, MTE3, 0
      wait_flag V, MTE3, 0
      mov.ub.gm z[s0], ub[zb], 1, 16384, 0, 0
      set_flag MTE3, V, 0            // z free again
    endfor
    wait_flag V, MTE2, 0
    wait_flag MTE3, V, 0
