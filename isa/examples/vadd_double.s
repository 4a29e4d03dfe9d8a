// Vector add z = x + y over 32768 f32 on one core: 8 tiles of 4096 elements (16 KiB),
// double-buffered, as Ascend C with BUFFER_NUM = 2: tiles alternate between buffer sets
// 0 and 1, so MTE2 loads tile i+1 while V adds tile i and MTE3 stores tile i-1.
//
// expected cycles: 8839
//
// Costs on ascend910b (as in vadd_single.s): load 712 (MTE2 busy 512 beats, the 200 latency
// pipelined), vadd 64, store 356 (MTE3 busy 256), flags 1.
// MTE2 is the bottleneck and now never waits: it streams the beats of the loads back to back
// while their latencies overlap, per tile 1 (wait V->MTE2) + 512 + 512 + 1 (set MTE2->V) = 1026
// cycles, starting at cycle 6 (issue of 4 sets, for, add). The last tile's wait starts at
// 6 + 7 x 1026 = 7188, its y lands at 7188 + 1 + 512 + 712 = 8413, then:
//   V: wait MTE2->V, wait MTE3->V, vadd, set V->MTE2, set V->MTE3  = 1 + 1 + 64 + 1 + 1 = 68
//   MTE3: wait, store until it lands (set MTE3->V under its latency) = 1 + 356         = 357
//   V: the final wait MTE3->V                                       = 1
//   8413 + 68 + 357 + 1                                                                 = 8839
// The single-buffered twin takes 10698: its tile period is 1292, here 1026. Per tile the
// double buffer hides y's load latency (200), which the single buffer's V chain must wait for
// before MTE2 may go on, and that V chain (wait MTE2->V, wait MTE3->V, vadd, set V->MTE2 =
// 67), and costs its set MTE2->V on MTE2 (1): 200 + 67 - 1 = 266. Both end with the same 1651
// cycles after the last tile's wait, so the model predicts the difference as 7 of the 8 tile
// periods minus the 3 extra issue cycles before the first load here:
// 7 x 266 - 3 = 1859 = 10698 - 8839.
.kernel vadd_double
.gm x f32 [32768] init=random seed=1
.gm y f32 [32768] init=random seed=2
.gm z f32 [32768] init=zeros
.buffer x0 ub 0 16384
.buffer y0 ub 16384 16384
.buffer z0 ub 32768 16384
.buffer x1 ub 49152 16384
.buffer y1 ub 65536 16384
.buffer z1 ub 81920 16384
    set_flag V, MTE2, 0
    set_flag V, MTE2, 1
    set_flag MTE3, V, 0
    set_flag MTE3, V, 1
    for s0, 0, 131072, 32768         // s0: byte offset of the pair of tiles
      add s1, s0, 16384
      wait_flag V, MTE2, 0
      mov.gm.ub ub[x0], x[s0], 1, 16384, 0, 0
      mov.gm.ub ub[y0], y[s0], 1, 16384, 0, 0
      set_flag MTE2, V, 0
      wait_flag V, MTE2, 1
      mov.gm.ub ub[x1], x[s1], 1, 16384, 0, 0
      mov.gm.ub ub[y1], y[s1], 1, 16384, 0, 0
      set_flag MTE2, V, 1
      wait_flag MTE2, V, 0
      wait_flag MTE3, V, 0
      vadd.f32 ub[z0], ub[x0], ub[y0], 4096
      set_flag V, MTE2, 0
      set_flag V, MTE3, 0
      wait_flag MTE2, V, 1
      wait_flag MTE3, V, 1
      vadd.f32 ub[z1], ub[x1], ub[y1], 4096
      set_flag V, MTE2, 1
      set_flag V, MTE3, 1
      wait_flag V, MTE3, 0
      mov.ub.gm z[s0], ub[z0], 1, 16384, 0, 0
      set_flag MTE3, V, 0
      wait_flag V, MTE3, 1
      mov.ub.gm z[s1], ub[z1], 1, 16384, 0, 0
      set_flag MTE3, V, 1
    endfor
    wait_flag V, MTE2, 0
    wait_flag V, MTE2, 1
    wait_flag MTE3, V, 0
    wait_flag MTE3, V, 1
