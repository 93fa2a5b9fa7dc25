# conv.s: a 2-D convolution of an R8 image through the texture unit's
# collective 2x2-quad fetch (docs/cu.md, "tex"; docs/texture.md).
#   out[y][x] = sum_{j<KH, i<KW} w[j][i] * img[a(y + j - KH/2)][a(x + i - KW/2)]
# user data: [image, out, W, H, weights, KW, KH, mode]; image R8 row-major
# W x H, weights int8 row-major KH x KW (1..8 each), out int32 row-major
# W x H, mode 0 clamp, 1 repeat, 2 mirror (on both axes).
# Block (x, y) computes pixels 16x .. 16x+15 and 8y .. 8y+7 (block_tile
# [16, 8]), clipped at the image's edges: one tex of 8 x 4 quads.
# Share (smem_bytes 8192): the output tile at 0 (16 x 8 int32, 512 bytes),
# the weights just before the texture, the whole image at 576 (so W*H at
# most 7616 bytes; a larger image stops the block with the smem error).
        cdl r3, 8, ud[0]        # r3 image, r4 out, r5 W, r6 H, r7 weights, r8 KW, r9 KH, r10 mode
        li r11, 576             # T: the texture
        shli r12, r6, 16
        or r12, r12, r5         # H rows of W bytes
        ld r11, r3, r5, r12     # the image, packed (pitch W)
        mul r13, r8, r9         # KW*KH
        sub r14, r11, r13       # the weights end where the texture starts
        ori r15, r13, 0x10000   # one row of KW*KH bytes
        ld r14, r7, r13, r15
        shli r16, r0, 4         # x0 = 16x
        shli r17, r1, 3         # y0 = 8y
        shli r18, r17, 16
        or r18, r18, r16        # rc: x0 | y0 << 16
        subi r19, r8, 1
        shli r19, r19, 13
        or r19, r19, r5         # rb: W | (KW-1) << 13
        subi r20, r9, 1
        shli r20, r20, 29
        or r19, r19, r20        #   | (KH-1) << 29
        shli r20, r6, 16
        or r19, r19, r20        #   | H << 16
        li r21, 0               # O: the output tile
        bz r10, clamp
        subi r22, r10, 1
        bz r22, repeat
        tex r21, r11, r19, r18, conv 8x4, r8, mirror, mirror, c 0
        jmp store
repeat:
        tex r21, r11, r19, r18, conv 8x4, r8, repeat, repeat, c 0
        jmp store
clamp:
        tex r21, r11, r19, r18, conv 8x4, r8, clamp, clamp, c 0
store:
        sub r23, r6, r17
        mini r23, r23, 8        # rows: min(8, H - y0)
        sub r24, r5, r16
        mini r24, r24, 16
        shli r24, r24, 2        # bytes a row: 4 * min(16, W - x0)
        shli r23, r23, 16
        or r23, r23, r24
        mul r25, r17, r5
        add r25, r25, r16
        shli r25, r25, 2
        add r25, r25, r4        # out + 4 * (y0*W + x0)
        shli r26, r5, 2         # stride 4W
        st r21, r25, r26, r23, 64   # the tile's rows are 64 bytes apart
        end
