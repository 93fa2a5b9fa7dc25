# copy2d: block (x, y) copies its TW x TH tile of a W x H byte image from
# src to dst through its scratchpad share, clipping the tile at the image's
# right and bottom edges. User data: [src, dst, W, H, TW, TH].
        cdl r3, 6, ud[0]        # r3 src, r4 dst, r5 W, r6 H, r7 TW, r8 TH
        mul r9, r0, r7          # x0 = x * TW
        mul r10, r1, r8         # y0 = y * TH
        sub r11, r5, r9
        min r11, r11, r7        # tile width  = min(TW, W - x0)
        sub r12, r6, r10
        min r12, r12, r8        # tile height = min(TH, H - y0)
        mul r13, r10, r5
        add r13, r13, r9        # byte offset of the tile = y0 * W + x0
        shli r14, r12, 16
        or r14, r14, r11        # shape: rows << 16 | bytes a row
        li r15, 0               # scratchpad offset 0, rows packed
        add r2, r3, r13
        ld r15, r2, r5, r14     # memory rows (stride W) into the scratchpad
        add r2, r4, r13
        st r15, r2, r5, r14     # and out to dst (stride W)
        end
