// One matmul tile C[64x64] = A[64x128] @ B[128x64] in f16 with f32 accumulation, the path
// a cube kernel takes: GM -> L1 (MTE2), L1 -> L0A / L0B (MTE1, B transposed on the way),
// mmad on the cube (M) into L0C, and out through FIX with the f32 -> f16 conversion.
// Separate events for A and B let MTE1 move A into L0A while MTE2 is still loading B.
//
// expected cycles: 1573
//
// Costs on ascend910b (a transfer's fixed latency is pipelined: its pipe is busy only for the
// beats and takes its next instruction then, the data lands `latency` cycles later, and a
// set_flag fires once its pipe's transfers have landed):
//   GM -> L1 of A (16 KiB): 200 + 16384/32 = 712     (MTE2 busy 0..512, lands at 712)
//   set MTE2->MTE1 (A)                                  (MTE2 512..513, fires at 712)
//   GM -> L1 of B^T (16 KiB): 712                      (MTE2 busy 513..1025, lands at 1225)
//   set MTE2->MTE1 (B)                                  (MTE2 1025..1026, fires at 1225)
//   L1 -> L0A of A: 20 + 16384/512 = 52, hidden under B's load (MTE1, wait 712, 713..765)
//   wait for B, L1 -> L0B transposed: 1 + 20 + 64 rows x 8 beats x 32/256 = 1 + 84
//   set MTE1->M (under L0B's latency, fires when it lands), wait        1
//   mmad 64x128x64 f16: ceil(64/16) x ceil(64/16) x ceil(128/16) = 4 x 4 x 8 = 128
//   set M->FIX, wait                                                 1 + 1
//   FIX L0C -> GM, 64x64 f16 = 8 KiB: 100 + 8192/256                132
//   1225 + 1 + 84 + 1 + 128 + 2 + 132                          =  1573
.kernel matmul_tile
.gm a f16 [64, 128] init=random seed=4          // A: M x K, row-major
.gm bt f16 [64, 128] init=random seed=5         // B stored transposed: N x K (as nn.Linear)
.gm c f16 [64, 64] init=zeros                   // C = A @ B: M x N
.buffer a_l1 l1 0 16384
.buffer b_l1 l1 16384 16384
    mov.gm.l1 l1[a_l1], a[0], 1, 16384, 0, 0
    set_flag MTE2, MTE1, 0
    mov.gm.l1 l1[b_l1], bt[0], 1, 16384, 0, 0
    set_flag MTE2, MTE1, 1
    wait_flag MTE2, MTE1, 0
    mov.l1.l0a l0a[0], l1[a_l1], 1, 16384, 0, 0             // A: 64 rows of 128 f16 (K0 = 16)
    wait_flag MTE2, MTE1, 1
    mov.l1.l0b.f16 l0b[0], l1[b_l1], 64, 256, 256, 128, transpose=1   // B = Bt^T: 128 rows of 64
    set_flag MTE1, M, 0
    wait_flag MTE1, M, 0
    mmad.f32.f16 l0c[0], l0a[0], l0b[0], 64, 128, 64, init=1
    set_flag M, FIX, 0
    wait_flag M, FIX, 0
    mov.l0c.gm.f16.f32 c[0], l0c[0], 1, 16384, 0, 0          // FIX: f32 -> f16 on the way out
