# compress: block (x, 0, 0) compresses elements x*E .. min(n, (x+1)*E) of
# src (E = 64, the block tile) with the mask `element != 0`: the selected
# elements packed at dense + x*E*s, the mask bits (LSB first) at
# masks + x*E/8, the count as an int32 at counts + 4x (s = element_bits/8).
# User data: [src, n, dense, masks, counts, element_bits].
        cdl r3, 6, ud[0]        # r3 src, r4 n, r5 dense, r6 masks, r7 counts, r8 element_bits
        li r9, 64               # E: elements a block
        shri r10, r8, 3         # s: bytes an element
        mul r11, r0, r9         # first = x * E
        sub r12, r4, r11
        min r12, r12, r9        # cnt = min(E, n - first)
        mul r13, r11, r10       # first * s
        add r14, r3, r13
        mul r15, r12, r10       # cnt * s bytes
        li r16, 0
        li r17, 65536
        or r17, r17, r15        # one row of cnt * s bytes
        ld r16, r14, r17, r17   # the block's elements into the share at 0
        li r18, 256             # packed elements at 256
        li r19, 512             # the count at 512, the mask bits from 516
        seqi r20, r8, 8
        bnz r20, e8
        seqi r20, r8, 16
        bnz r20, e16
        cmp r18, r16, r19, r12, 32
        jmp stored
e8:     cmp r18, r16, r19, r12, 8
        jmp stored
e16:    cmp r18, r16, r19, r12, 16
stored: shli r21, r0, 2
        add r21, r7, r21        # counts + 4x
        li r22, 65540           # one row of 4 bytes
        st r19, r21, r22, r22
        shri r23, r11, 3
        add r23, r6, r23        # masks + first / 8
        addi r24, r12, 7
        shri r24, r24, 3        # ceil(cnt / 8) mask bytes
        li r25, 65536
        or r25, r25, r24
        addi r26, r19, 4
        st r26, r23, r25, r25
        cdl r27, 1, [r21]       # the count, back from memory
        mul r27, r27, r10       # packed bytes
        li r28, 65536
        or r28, r28, r27
        add r29, r5, r13        # dense + first * s
        st r18, r29, r28, r28
        end
