# gemm: C = A.B (+ bias) (then ReLU), int8 A (M x K) and B (K x N)
# row-major, int32 C (M x N) row-major, wrapping at 32 bits.
# User data: [A, B, C, bias (0 = none), M, N, K, flags (bit 0 ReLU)].
# Block (x, y) computes the 16 x 16 tile at rows 16y.., columns 16x..
# (clipped at M and N), over K in chunks of 128 k-steps: the first chunk
# adds the bias (if any), the later ones accumulate into C in the share.
# Share (5184 bytes): A chunk at 0 (up to 16 rows of 128 bytes), B chunk
# at 2048 (up to 128 rows of 16 bytes), C at 4096, the bias row at 5120.
# r28 is never written: 0, A's offset in the share.
        cdl r3, 8, ud[0]          # r3 A, r4 B, r5 C, r6 bias, r7 M, r8 N, r9 K, r10 flags
        muli r11, r1, 16          # row0
        muli r12, r0, 16          # col0
        sub r13, r7, r11
        mini r13, r13, 16         # tm = min(16, M - row0)
        sub r14, r8, r12
        mini r14, r14, 16         # tn = min(16, N - col0)
        shli r25, r13, 16         # tm << 16
        shli r26, r14, 2          # 4*tn
        addi r27, r14, 7
        andi r27, r27, -8         # PB = 8*ceil(tn/8)
        shli r23, r14, 8
        or r23, r23, r13          # tm | tn << 8
        bz r6, nobias
        shli r16, r12, 2
        add r16, r6, r16          # &bias[col0]
        ori r18, r26, 0x10000     # 1 row of 4*tn bytes
        li r19, 5120
        ld r19, r16, r26, r18
nobias:
        mul r20, r11, r9
        add r20, r3, r20          # &A[row0][0]
        add r21, r4, r12          # &B[0][col0]
        li r24, 2048              # B's offset in the share
        li r19, 4096              # C's offset in the share
chunk:
        sub r16, r9, r15
        mini r16, r16, 128        # kc = min(128, K - k0)
        addi r17, r16, 3
        andi r17, r17, -4         # PA = 4*ceil(kc/4): whole words a row
        or r18, r25, r17          # tm rows of PA bytes (at most 3 past the chunk: not used)
        add r22, r20, r15         # &A[row0][k0]
        ld r28, r22, r9, r18
        shli r18, r16, 16
        or r18, r18, r27          # kc rows of PB bytes
        mul r22, r15, r8
        add r22, r21, r22         # &B[k0][col0]
        ld r24, r22, r8, r18
        shli r17, r16, 16
        or r18, r23, r17          # tm | tn << 8 | kc << 16
        bnz r15, acc
        bnz r6, withbias
        mma r19, r28, r24, r18
        jmp next
withbias:
        mma r19, r28, r24, r18, bias 5120
        jmp next
acc:
        mma r19, r28, r24, r18, acc
next:
        add r15, r15, r16         # k0 += kc
        slt r17, r15, r9
        bnz r17, chunk
        andi r17, r10, 1
        bz r17, store
        or r18, r25, r14          # tm rows of tn words
        act r19, r18, 0           # ReLU
store:
        mul r17, r11, r8
        add r17, r17, r12
        shli r17, r17, 2
        add r17, r5, r17          # &C[row0][col0]
        shli r16, r8, 2           # stride 4N
        or r18, r25, r26          # tm rows of 4*tn bytes
        st r19, r17, r16, r18
        end
