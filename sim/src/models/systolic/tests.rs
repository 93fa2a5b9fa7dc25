//! Hand-worked cases of the golden model.

// The hand-worked cycle counts below follow the loader schedule of
// docs/systolic.md; `1 + ...` is the unit's input register, which takes each
// group one cycle before the loader does.
use super::reference::{reference_c, wrap};
use super::timing::simulate;
use super::*;
use gpurtl_params::systolic::ElemType;
use serde_json::{json, Value};

fn cfg(rows: u32, cols: u32) -> SystolicParams {
    SystolicParams { rows, cols, pipeline: 0, ..SystolicParams::default() }
}

fn gemm(a: Vec<Vec<i64>>, b: Vec<Vec<i64>>) -> Gemm {
    Gemm { a, b, c0: None }
}

// ---- values ----

#[test]
fn grid_2x2_on_2x3x2() {
    let c = cfg(2, 2);
    let g = gemm(vec![vec![1, 2, 3], vec![4, 5, 6]], vec![vec![7, 8], vec![9, 10], vec![11, 12]]);
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![58, 64], vec![139, 154]]);
    // One tile, one group of 3 steps: accept 0, issues 1..3, tile-ending
    // at 3; rows ready at 3+0+2+1 = 6 and 7, out at 7 and 8.
    assert_eq!(o.cycles, 1 + 8);
    assert_eq!(o.useful_macs, 12);
    assert_eq!(o.gated_products, 0);
    assert_eq!(o.skipped_ksteps, 0);
    assert!((o.utilization(&c) - 12.0 / 36.0).abs() < 1e-12);
}

#[test]
fn mixed_types_at_extremes() {
    // i8 x u8: signed accumulator.
    let c = SystolicParams { b_type: ElemType::U8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![-128, 127]], vec![vec![255], vec![255]]));
    assert_eq!(o.c, vec![vec![-255]]);
    let o = run(&c, &gemm(vec![vec![-128, -128]], vec![vec![255], vec![255]]));
    assert_eq!(o.c, vec![vec![-65280]]);
    // i4 x i2.
    let c = SystolicParams { a_type: ElemType::I4, b_type: ElemType::I2, acc_bits: 8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![-8, 7]], vec![vec![-2], vec![1]]));
    assert_eq!(o.c, vec![vec![23]]);
    // u4 x u2: unsigned accumulator.
    let c = SystolicParams { a_type: ElemType::U4, b_type: ElemType::U2, acc_bits: 8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![15, 15]], vec![vec![3], vec![3]]));
    assert_eq!(o.c, vec![vec![90]]);
    // u4 x i2: signed.
    let c = SystolicParams { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![15]], vec![vec![-2]]));
    assert_eq!(o.c, vec![vec![-30]]);
    // Type helpers.
    assert_eq!((ElemType::I2.min(), ElemType::I2.max()), (-2, 1));
    assert_eq!((ElemType::U4.min(), ElemType::U4.max()), (0, 15));
    assert_eq!(ElemType::from_name("u2"), Some(ElemType::U2));
    assert_eq!(ElemType::from_name("i16"), None);
}

#[test]
fn wraps_to_acc_bits() {
    // 3 * 49 = 147 -> 147 - 256 = -109 (signed 8-bit).
    let c = SystolicParams { a_type: ElemType::I4, b_type: ElemType::I4, acc_bits: 8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![7, 7, 7]], vec![vec![7], vec![7], vec![7]]));
    assert_eq!(o.c, vec![vec![-109]]);
    // 2 * 64 = 128 -> -128.
    let o = run(&c, &gemm(vec![vec![-8, -8]], vec![vec![-8], vec![-8]]));
    assert_eq!(o.c, vec![vec![-128]]);
    // Unsigned: 2 * 225 = 450 -> 194.
    let c = SystolicParams { a_type: ElemType::U4, b_type: ElemType::U4, acc_bits: 8, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![15, 15]], vec![vec![15], vec![15]]));
    assert_eq!(o.c, vec![vec![194]]);
}

#[test]
fn c0_added_and_wrapped() {
    let c = cfg(2, 2);
    let g = Gemm {
        a: vec![vec![1, 2], vec![3, 4]],
        b: vec![vec![1, 0], vec![0, 1]],
        c0: Some(vec![vec![10, -20], vec![2147483647, 0]]),
    };
    assert_eq!(run(&c, &g).c, vec![vec![11, -18], vec![-2147483646, 4]]);
    // Unsigned 64-bit accumulator: held as the bit pattern, written unsigned.
    let c = SystolicParams { a_type: ElemType::U8, b_type: ElemType::U8, acc_bits: 64, ..cfg(1, 1) };
    let g = parse_input(&json!({"a": [[0]], "b": [[5]], "c0": [[18446744073709551615u64]]}), &c).unwrap();
    assert_eq!(g.c0, Some(vec![vec![-1]]));
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![-1]]);
    assert_eq!(output_json(&c, &o)["c"], json!([[18446744073709551615u64]]));
    let g = Gemm { a: vec![vec![1]], b: vec![vec![1]], c0: Some(vec![vec![-1]]) };
    assert_eq!(run(&c, &g).c, vec![vec![0]]);
}

#[test]
fn lanes_2_with_odd_k() {
    let c = SystolicParams { lanes: 2, channel_bits: 16, ..cfg(1, 1) };
    let g = gemm(vec![vec![1, 2, 3]], vec![vec![4], vec![5], vec![6]]);
    let t = program(&c, &g);
    assert_eq!(t.len(), 1);
    let steps = &t[0].groups[0].steps();
    assert_eq!(
        steps,
        &vec![Step { a: vec![vec![1, 2]], b: vec![vec![4, 5]] }, Step { a: vec![vec![3, 0]], b: vec![vec![6, 0]] }]
    );
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![32]]);
    // Step 0: 1*1 + 1*1 = 2 MACs; step 1: lane 0 only, 1 MAC, 1 gated.
    assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (3, 1, 0));
    // Issues at 1, 2 (tile-ending); row 0 ready at 2+0+1+1 = 4, out at 5.
    assert_eq!(o.cycles, 1 + 5);
    assert!((o.utilization(&c) - 3.0 / 12.0).abs() < 1e-12);
}

#[test]
fn rowcol_skip_drops_zero_row_and_column() {
    let a = vec![vec![1, 2], vec![0, 0], vec![3, 4]];
    let b = vec![vec![0, 5], vec![0, 6]];
    let c0 = vec![vec![1, 2], vec![3, 4], vec![5, 6]];
    let g = Gemm { a, b, c0: Some(c0) };
    let on = cfg(1, 1);
    let off = SystolicParams { rowcol_skip: false, ..cfg(1, 1) };
    let t = program(&on, &g);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].rows.clone(), t[0].cols.clone()), (vec![Some(0)], vec![Some(1)]));
    assert_eq!((t[1].rows.clone(), t[1].cols.clone()), (vec![Some(2)], vec![Some(1)]));
    assert_eq!(program(&off, &g).len(), 6);
    let want = vec![vec![1, 2 + 17], vec![3, 4], vec![5, 6 + 39]];
    assert_eq!(run(&on, &g).c, want);
    assert_eq!(run(&off, &g).c, want);
    // Nothing to stream at all: no tile, cycles 0, C = C0.
    let g = Gemm { a: vec![vec![0, 0]], b: vec![vec![1], vec![2]], c0: Some(vec![vec![7]]) };
    assert!(program(&on, &g).is_empty());
    let o = run(&on, &g);
    assert_eq!(o, Outcome { c: vec![vec![7]], cycles: 0, useful_macs: 0, gated_products: 0, skipped_ksteps: 0 });
    assert_eq!(o.utilization(&on), 0.0);
}

// ---- the step program ----

#[test]
fn program_shape() {
    // R = C = 2, L = 2, group 2; M = 3, K = 5, N = 1.
    let c = SystolicParams { lanes: 2, channel_bits: 16, group: 2, ..cfg(2, 2) };
    let a = vec![vec![1, 2, 3, 4, 5], vec![6, 7, 8, 9, 10], vec![11, 12, 13, 14, 15]];
    let b = vec![vec![1], vec![2], vec![3], vec![4], vec![5]];
    let t = program(&c, &gemm(a, b));
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].rows, vec![Some(0), Some(1)]);
    assert_eq!(t[1].rows, vec![Some(2), None]);
    assert_eq!(t[0].cols, vec![Some(0), None]);
    // ceil(5/2) = 3 steps -> groups of 2 and 1.
    for tile in &t {
        assert_eq!(tile.groups.len(), 2);
        assert_eq!((tile.groups[0].len(), tile.groups[0].last), (2, false));
        assert_eq!((tile.groups[1].len(), tile.groups[1].last), (1, true));
    }
    assert_eq!(t[0].groups[0].step(1), Step { a: vec![vec![3, 4], vec![8, 9]], b: vec![vec![3, 4], vec![0, 0]] });
    assert_eq!(t[1].groups[1].step(0), Step { a: vec![vec![15, 0], vec![0, 0]], b: vec![vec![5, 0], vec![0, 0]] });
    // Row-block-major tile order.
    let c = cfg(1, 1);
    let t = program(&c, &gemm(vec![vec![1], vec![2]], vec![vec![1, 2]]));
    let order: Vec<_> = t.iter().map(|x| (x.rows[0], x.cols[0])).collect();
    assert_eq!(order, vec![(Some(0), Some(0)), (Some(0), Some(1)), (Some(1), Some(0)), (Some(1), Some(1))]);
}

// ---- cycles and counters ----

#[test]
fn cycles_single_pe_one_tile() {
    // Accept at 0, issues at 1, 2, 3, tile-ending at 3, row 0 ready at
    // 3+0+1+1 = 5, out at 6 (output register).
    let o = run(&cfg(1, 1), &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]]));
    assert_eq!(o.cycles, 1 + 6);
    assert_eq!(o.c, vec![vec![6]]);
    // Same with the steps cut into groups of 2 (back-to-back groups).
    let c = SystolicParams { group: 2, ..cfg(1, 1) };
    assert_eq!(run(&c, &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]])).cycles, 1 + 6);
}

#[test]
fn cycles_second_tile_waits_for_first_to_drain() {
    // 1x1 grid, K = 2, two tiles (rows 0 and 1).
    // Tile 0: accept 0, issues 1, 2 (ending), row ready at 4, into the
    // output register at 4, out at 5: in flight 3..=4.
    // Tile 1: accepted at 2, step 0 at 3, ending step waits at 4, issues
    // at 5, row ready at 5+0+1+1 = 7, out at 8.
    let o = run(&cfg(1, 1), &gemm(vec![vec![1, 2], vec![3, 4]], vec![vec![1], vec![1]]));
    assert_eq!(o.c, vec![vec![3], vec![7]]);
    assert_eq!(o.cycles, 1 + 8);
    // K = 4: tile 0 out at 7 (in flight 5..=6); tile 1's ending step
    // comes at 8, no wait: out at 11.
    let o = run(&cfg(1, 1), &gemm(vec![vec![1; 4], vec![1; 4]], vec![vec![1]; 4]));
    assert_eq!(o.cycles, 1 + 11);
    // 2x2 grid, K = 1, two column tiles: tile 0 ends at 1, rows ready at
    // 4, 5, out at 5, 6 (in flight 2..=5); tile 1 accepted at 1, ending
    // waits until 6, rows ready at 9, 10, out at 10, 11.
    let o = run(&cfg(2, 2), &gemm(vec![vec![1], vec![1]], vec![vec![1, 1, 1]]));
    assert_eq!(o.cycles, 1 + 11);
}

#[test]
fn many_tiles_one_pe() {
    // 400 x 1 x 400 on a 1x1 grid: 160 000 tiles of one step each (the
    // model once scanned every finished tile each cycle). No zero values,
    // so every tile is alike: accept 0; tile t's step (tile-ending)
    // issues at s_t; its row is ready at s_t+0+1+1 = s_t+2 and goes out
    // at s_t+3, in flight s_t+1..=s_t+2; tile t+1 (accepted at s_t, its
    // ending step waiting) issues at s_t+3. So s_t = 1+3t, the last
    // row out at 3*160 000+1.
    let (m, n) = (400usize, 400usize);
    let a: Vec<Vec<i64>> = (0..m).map(|i| vec![1 + (i % 127) as i64]).collect();
    let b: Vec<Vec<i64>> = vec![(0..n).map(|j| -1 - (j % 128) as i64).collect()];
    let g = gemm(a.clone(), b.clone());
    let want: Vec<Vec<i64>> = (0..m).map(|i| (0..n).map(|j| a[i][0] * b[0][j]).collect()).collect();
    let tiles = (m * n) as u64;
    let o = run(&cfg(1, 1), &g);
    assert_eq!(o.c, want);
    assert_eq!(o.c, reference_c(&cfg(1, 1), &g));
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 3 * tiles + 1, tiles, 0, 0));
    // The same in weight-stationary: 400 tiles (one per column) of 400
    // vectors. Tile t's weight row goes in while tile t-1 streams; its
    // vectors issue at 1+400t ..= 400(t+1), back-to-back; the last row
    // out at 160 000+1+1.
    let o = run(&ws(1, 1), &g);
    assert_eq!(o.c, want);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (160_000 + 2 + 1, tiles, 0, 0));
}

#[test]
fn load_filter_on_and_off() {
    let g = gemm(vec![vec![1, 0, 2, 0]], vec![vec![3], vec![4], vec![5], vec![6]]);
    // On: steps 0 and 2 issue at 1, 2 (ending); ready at 4, out at 5.
    let on = cfg(1, 1);
    let o = run(&on, &g);
    assert_eq!(o.c, vec![vec![13]]);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 5, 2, 0, 2));
    // Off: all 4 issue at 1..4; ready at 6, out at 7; the zero steps are gated.
    let off = SystolicParams { load_filter: false, ..cfg(1, 1) };
    let o = run(&off, &g);
    assert_eq!(o.c, vec![vec![13]]);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 7, 2, 2, 0));
    // Off and ungated.
    let o = run(&SystolicParams { gating: false, ..off }, &g);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 7, 2, 0, 0));
}

#[test]
fn all_zero_tile_issues_a_null_step() {
    let c = SystolicParams { rowcol_skip: false, ..cfg(1, 1) };
    let g = gemm(vec![vec![0, 0]], vec![vec![1], vec![1]]);
    // Accept 0, null step (tile-ending) at 1, ready at 1+0+1+1 = 3, out
    // at 4 (output register).
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![0]]);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 4, 0, 0, 2));
}

#[test]
fn empty_non_last_group_frees_the_loader() {
    // group 2, K = 4: group 0 (steps 0, 1) all zero, group 1 useful.
    // Accept g0 at 0; at 1 it has nothing -> accept g1 at 1; issues at 2,
    // 3 (ending); ready at 3+0+1+1 = 5, out at 6.
    let c = SystolicParams { group: 2, ..cfg(1, 1) };
    let o = run(&c, &gemm(vec![vec![0, 0, 1, 1]], vec![vec![1]; 4]));
    assert_eq!((o.cycles, o.skipped_ksteps, o.useful_macs), (1 + 6, 2, 2));
}

#[test]
fn gated_and_useful_by_hand() {
    // 2x2 grid, K = 2. Step 0: A col (1, 2), B row (0, 4): 2*1 = 2 MACs,
    // 2 gated. Step 1: A (0, 3), B (5, 6): 1*2 = 2 MACs, 2 gated.
    let g = gemm(vec![vec![1, 0], vec![2, 3]], vec![vec![0, 4], vec![5, 6]]);
    let o = run(&cfg(2, 2), &g);
    assert_eq!(o.c, vec![vec![0, 4], vec![15, 26]]);
    assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (4, 4, 0));
    // Issues 1, 2 (ending): rows ready at 2+0+2+1 = 5 and 6, out at 6, 7.
    assert_eq!(o.cycles, 1 + 7);
    let o = run(&SystolicParams { gating: false, ..cfg(2, 2) }, &g);
    assert_eq!((o.useful_macs, o.gated_products), (4, 0));
    // Padding counts as gated: a 3x3 grid on the same GEMM.
    let o = run(&cfg(3, 3), &g);
    assert_eq!((o.useful_macs, o.gated_products), (4, 2 * 9 - 4));
}

#[test]
fn output_keys() {
    let c = cfg(1, 1);
    let o = run(&c, &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]]));
    assert_eq!(
        output_json(&c, &o),
        json!({"c": [[6]], "cycles": 1 + 6, "useful_macs": 3, "gated_products": 0, "skipped_ksteps": 0,
               "utilization": 3.0 / 7.0})
    );
}

#[test]
fn prune_blocks() {
    let m = vec![vec![1, 1, 5, -5], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, -1, 0, 0]];
    // Block sums: 4, 0, -1, 9.
    assert_eq!(
        prune(&m, 2, 2),
        vec![vec![1, 1, 0, 0], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, 0, 0, 0]]
    );
    assert_eq!(prune(&m, 2, 1), vec![vec![1, 1, 0, 0], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, -1, 0, 0]]);
    assert_eq!(prune(&m, 2, 0), m);
    // Edge tiles are smaller: 3x3 in 2x2 blocks.
    let m = vec![vec![1, 1, 3], vec![1, 1, 0], vec![-2, 0, 1]];
    assert_eq!(prune(&m, 2, 2), vec![vec![1, 1, 3], vec![1, 1, 0], vec![-2, 0, 0]]);
}

// ---- parse_input ----

/// The first violation of an input (each case below is about one rule).
fn perr(v: Value, c: &SystolicParams) -> String {
    parse_input(&v, c).unwrap_err().0[0].to_string()
}

#[test]
fn parse_reports_every_violation() {
    let c = cfg(2, 2);
    let e = parse_input(&json!({"a": [[1, 300], [2]], "b": [[1], [-200]], "x": 1, "a_type": "u8"}), &c).unwrap_err();
    let got: Vec<String> = e.0.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        got,
        [
            "input `x` = (given): must be absent: keys are a, b, c0, a_type, b_type",
            "input `a_type` = \"u8\": must be \"i8\" (the block's a_type parameter)",
            "input `a[0][1]` = 300: must be an integer from -128 to 127 (i8)",
            "input `a[1]` = a list of 1 values: must be a list of 2 values (the length of a[0])",
            "input `b[1][0]` = -200: must be an integer from -128 to 127 (i8)",
        ]
    );
    // Many bad values: the first few, then a count.
    let (row, col): (Vec<i64>, Vec<Vec<i64>>) = (vec![999; 9], vec![vec![1]; 9]);
    let e = parse_input(&json!({"a": [row], "b": col}), &c).unwrap_err();
    assert_eq!(e.0.len(), 6);
    assert_eq!(e.0[5].to_string(), "input `a` = 4 more values like those: must be an integer from -128 to 127 (i8)");
}

#[test]
fn parse_example() {
    let c = cfg(2, 2);
    let g = parse_input(
        &json!({"a": [[1, -2]], "b": [[3], [4]], "c0": [[-5]], "a_type": "i8", "b_type": "i8"}),
        &c,
    )
    .unwrap();
    assert_eq!(g, Gemm { a: vec![vec![1, -2]], b: vec![vec![3], vec![4]], c0: Some(vec![vec![-5]]) });
    let g = parse_input(&json!({"a": [[127, -128]], "b": [[0, 1], [2, 3]]}), &c).unwrap();
    assert_eq!(g.c0, None);
}

#[test]
fn parse_messages() {
    let i8c = cfg(2, 2);
    let u4 = SystolicParams { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(2, 2) };
    let uu = SystolicParams { a_type: ElemType::U8, b_type: ElemType::U2, acc_bits: 16, ..cfg(2, 2) };
    let ab = |extra: Value| {
        let mut o = json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 4], [5, 6], [7, 8]]});
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    };
    let cases: Vec<(Value, &SystolicParams, &str)> = vec![
        (json!([1]), &i8c, "input `(file)` = [1]: must be a JSON object with matrices `a` and `b`"),
        (ab(json!({"d": 1})), &i8c, "input `d` = (given): must be absent: keys are a, b, c0, a_type, b_type"),
        (json!({"b": [[1]]}), &i8c, "input `a` = (missing): must be a list of lists of integers"),
        (json!({"a": [[1]]}), &i8c, "input `b` = (missing): must be a list of lists of integers"),
        (json!({"a": 3, "b": [[1]]}), &i8c, "input `a` = 3: must be a list of lists of integers"),
        (json!({"a": [1], "b": [[1]]}), &i8c, "input `a[0]` = 1: must be a list of integers"),
        (json!({"a": [], "b": [[1]]}), &i8c, "input `a` = a list of 0 rows: must be a list of at least 1 row"),
        (json!({"a": [[]], "b": [[1]]}), &i8c, "input `a[0]` = a list of 0 values: must be a list of at least 1 value"),
        (
            json!({"a": [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3]], "b": [[1]]}),
            &i8c,
            "input `a[2]` = a list of 3 values: must be a list of 4 values (the length of a[0])",
        ),
        (
            json!({"a": [[1, 2, 3, 4]], "b": [[1], [2], [3]]}),
            &i8c,
            "input `b` = a list of 3 rows: must be a list of 4 rows (the columns of a)",
        ),
        (
            json!({"a": [[1, 2, 3, 4]], "b": []}),
            &i8c,
            "input `b` = a list of 0 rows: must be a list of 4 rows (the columns of a)",
        ),
        (json!({"a": [[1]], "b": "x"}), &i8c, "input `b` = \"x\": must be a list of lists of integers"),
        (json!({"a": [[1]], "b": [[]]}), &i8c, "input `b[0]` = a list of 0 values: must be a list of at least 1 value"),
        (
            json!({"a": [[1, 1]], "b": [[1, 2], [3]]}),
            &i8c,
            "input `b[1]` = a list of 1 values: must be a list of 2 values (the length of b[0])",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 128, 8]]})),
            &i8c,
            "input `a[1][2]` = 128: must be an integer from -128 to 127 (i8)",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 1.5, 8]]})),
            &i8c,
            "input `a[1][2]` = 1.5: must be an integer from -128 to 127 (i8)",
        ),
        (
            ab(json!({"b": [[1, 2], [3, 4], [5, -129], [7, 8]]})),
            &i8c,
            "input `b[2][1]` = -129: must be an integer from -128 to 127 (i8)",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 16, 8]]})),
            &u4,
            "input `a[1][2]` = 16: must be an integer from 0 to 15 (u4)",
        ),
        (ab(json!({"a": [[1, 2, 3, -1], [0, 0, 0, 0]]})), &u4, "input `a[0][3]` = -1: must be an integer from 0 to 15 (u4)"),
        (ab(json!({"b": [[1, 2], [3, 4], [5, 6], [7, 8]]})), &u4, "input `b[0][1]` = 2: must be an integer from -2 to 1 (i2)"),
        (ab(json!({"c0": 5})), &i8c, "input `c0` = 5: must be a list of lists of integers"),
        (ab(json!({"c0": [[1, 2]]})), &i8c, "input `c0` = a list of 1 rows: must be a list of 2 rows (the rows of a)"),
        (ab(json!({"c0": [[1, 2], 3]})), &i8c, "input `c0[1]` = 3: must be a list of integers"),
        (
            ab(json!({"c0": [[1, 2], [3, 4, 5]]})),
            &i8c,
            "input `c0[1]` = a list of 3 values: must be a list of 2 values (the columns of b)",
        ),
        (
            ab(json!({"c0": [[1, 2], [3, 2147483648u64]]})),
            &i8c,
            "input `c0[1][1]` = 2147483648: must be an integer from -2147483648 to 2147483647 (the signed 32-bit accumulator)",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 0], [-2, 1], [0, 0], [1, 1]], "c0": [[1, -129], [3, 4]]})),
            &u4,
            "input `c0[0][1]` = -129: must be an integer from -128 to 127 (the signed 8-bit accumulator)",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 0], [1, 2], [3, 0]], "c0": [[-1, 0], [0, 0]]})),
            &uu,
            "input `c0[0][0]` = -1: must be an integer from 0 to 65535 (the unsigned 16-bit accumulator)",
        ),
        (
            ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 0], [1, 2], [3, 0]], "c0": [[0, 65536], [0, 0]]})),
            &uu,
            "input `c0[0][1]` = 65536: must be an integer from 0 to 65535 (the unsigned 16-bit accumulator)",
        ),
        (ab(json!({"a_type": "u8"})), &i8c, "input `a_type` = \"u8\": must be \"i8\" (the block's a_type parameter)"),
        (ab(json!({"a_type": "int8"})), &i8c, "input `a_type` = \"int8\": must be \"i8\" (the block's a_type parameter)"),
        (ab(json!({"b_type": 8})), &i8c, "input `b_type` = 8: must be \"i8\" (the block's b_type parameter)"),
        (ab(json!({"b_type": "i8"})), &u4, "input `b_type` = \"i8\": must be \"i2\" (the block's b_type parameter)"),
    ];
    for (v, c, want) in cases {
        assert_eq!(perr(v.clone(), c), want, "{v}");
    }
    // Accepted edges: values at the type limits, c0 at the accumulator's.
    let c = SystolicParams { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(2, 2) };
    let g = parse_input(&json!({"a": [[0, 15]], "b": [[-2], [1]], "c0": [[-128]], "a_type": "u4", "b_type": "i2"}), &c)
        .unwrap();
    assert_eq!(g.b, vec![vec![-2], vec![1]]);
    let c = SystolicParams { acc_bits: 64, ..cfg(2, 2) };
    let g = parse_input(&json!({"a": [[0]], "b": [[0]], "c0": [[i64::MIN]]}), &c).unwrap();
    assert_eq!(g.c0, Some(vec![vec![i64::MIN]]));
    assert_eq!(
        perr(json!({"a": [[0]], "b": [[0]], "c0": [[9223372036854775808u64]]}), &c),
        "input `c0[0][0]` = 9223372036854775808: must be an integer from -9223372036854775808 to 9223372036854775807 (the signed 64-bit accumulator)"
    );
}

// ---- weight-stationary (dataflow = ws) ----
//
// Hand-worked cycles follow the "WS cycle rules": cycle 0 is the first
// weight transfer; a vector accepted in cycle c is held from c + 1; the
// output row of a vector issued at s goes out at s + R + C + pipeline.

fn ws(rows: u32, cols: u32) -> SystolicParams {
    SystolicParams { dataflow: Dataflow::Ws, ..cfg(rows, cols) }
}

#[test]
fn ws_single_pe() {
    // Weight at 0 (wcnt 0 -> 1); vector accepted at 0, held from 1;
    // issues at 1 (wcnt == R); row out at 1+1+1+P.
    let g = gemm(vec![vec![3]], vec![vec![5]]);
    let c = SystolicParams { pipeline: 2, ..ws(1, 1) };
    let o = run(&c, &g);
    assert_eq!(o, Outcome { c: vec![vec![15]], cycles: 1 + 1 + 1 + 2 + 1, useful_macs: 1, gated_products: 0, skipped_ksteps: 0 });
    assert_eq!(run(&ws(1, 1), &g).cycles, 4);
    // K = 2, M = 1: two tiles of one vector. Tile 0: weight 0, issue 1
    // (wblock = 1), out 3. Cycle 2: wblock 1 -> 0; weight of tile 1 at
    // 3; vector held since 2 issues at 4; out at 6.
    let o = run(&ws(1, 1), &gemm(vec![vec![1, 2]], vec![vec![3], vec![4]]));
    assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products), (vec![vec![11]], 7, 2, 0));
    // K = 2, M = 5: tile 0 issues at 1..=5; its wblock runs out at 2 and
    // tile 1's weight goes into the shadow at 3 while tile 0 streams;
    // tile 1's vector 0 (accepted at 5, held from 6) issues at 6..=10.
    let o = run(&ws(1, 1), &gemm(vec![vec![1, 1]; 5], vec![vec![1], vec![1]]));
    assert_eq!((o.c.clone(), o.cycles), (vec![vec![2]; 5], 10 + 2 + 1));
    // A zero product in a 1x1 grid is gated when the step is kept.
    let c = SystolicParams { load_filter: false, rowcol_skip: false, ..ws(1, 1) };
    let o = run(&c, &gemm(vec![vec![1, 0]], vec![vec![3], vec![4]]));
    assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (vec![vec![3]], 7, 1, 1, 0));
    let o = run(&SystolicParams { gating: false, ..c }, &gemm(vec![vec![1, 0]], vec![vec![3], vec![4]]));
    assert_eq!((o.useful_macs, o.gated_products), (1, 0));
}

#[test]
fn ws_grid_2x2_dense_m3() {
    // R = C = 2, K = 2, M = 3, N = 2: one tile, 3 vectors.
    // Weights at 0, 1; vector 0 accepted 0, held 1, issues at 2 (wcnt ==
    // 2; wcnt = 0, wblock = 3, open); vector 1 accepted 2, issues 3;
    // vector 2 accepted 3, issues 4 (last). Rows out at 6, 7, 8.
    let a = vec![vec![1, 2], vec![3, 4], vec![5, 6]];
    let b = vec![vec![1, 2], vec![3, 4]];
    let o = run(&ws(2, 2), &gemm(a.clone(), b.clone()));
    assert_eq!(o.c, vec![vec![7, 10], vec![15, 22], vec![23, 34]]);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (9, 12, 0, 0));
    assert!((o.utilization(&ws(2, 2)) - 12.0 / 36.0).abs() < 1e-12);
    let p2 = SystolicParams { pipeline: 2, ..ws(2, 2) };
    assert_eq!(run(&p2, &gemm(a.clone(), b.clone())).cycles, 11);
    // K = 3: k blocks {0, 1} and {2, pad}. Tile 0 as above (first issue
    // at 2, wblock 3 -> 2 -> 1 -> 0 over cycles 3..5); tile 1's weights
    // at 6, 7; its vector 0 (accepted at 4, held from 5) issues at 8,
    // then 9, 10; rows out at 12, 13, 14.
    let a = vec![vec![1, 2, 1], vec![3, 4, 1], vec![5, 6, 1]];
    let b = vec![vec![1, 2], vec![3, 4], vec![1, -1]];
    let o = run(&ws(2, 2), &gemm(a.clone(), b.clone()));
    assert_eq!(o.c, vec![vec![8, 9], vec![16, 21], vec![24, 33]]);
    // Tile 1: PE row 1 is padding: 2 useful, 2 gated per vector.
    assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (15, 18, 6, 0));
    assert_eq!(run(&p2, &gemm(a, b)).cycles, 17);
}

#[test]
fn ws_program_filters_and_padding() {
    // Row 1 of A and column 1 of B are zero (rowcol_skip); step 1 has no
    // non-zero A among the listed rows, step 2 none in B (load_filter).
    let a = vec![vec![1, 0, 2, 3], vec![0, 0, 0, 0], vec![4, 0, 5, 0]];
    let b = vec![vec![1, 0, 2], vec![6, 0, 7], vec![0, 0, 0], vec![8, 0, 9]];
    let g = Gemm { a, b, c0: Some(vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]]) };
    let c = ws(3, 3);
    let (t, skipped) = ws_program(&c, &g);
    assert_eq!(skipped, 2);
    assert_eq!(
        t,
        vec![WsTile {
            cols: vec![Some(0), Some(2), None],
            ksteps: vec![Some(0), Some(3), None],
            weights: vec![
                vec![vec![1], vec![2], vec![0]],
                vec![vec![8], vec![9], vec![0]],
                vec![vec![0], vec![0], vec![0]],
            ],
            vectors: vec![
                WsVector { row: 0, a: vec![vec![1], vec![3], vec![0]], last: false },
                WsVector { row: 2, a: vec![vec![4], vec![0], vec![0]], last: true },
            ],
        }]
    );
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![1 + 25, 2, 3 + 29], vec![4, 5, 6], vec![7 + 4, 8, 9 + 8]]);
    assert_eq!(o.c, reference_c(&c, &g));
    // Vector 0: (1, 3) x (1, 2 | 8, 9) = 4; vector 1: (4) x (1, 2) = 2.
    assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (6, 18 - 6, 2));
    // Weights 0..2, issues 3, 4; rows out at 9, 10.
    assert_eq!(o.cycles, 11);
    // No load filter: all 4 steps, k blocks {0, 1, 2} and {3, pad, pad}.
    let (t, skipped) = ws_program(&SystolicParams { load_filter: false, ..ws(3, 3) }, &g);
    assert_eq!(skipped, 0);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].ksteps, vec![Some(0), Some(1), Some(2)]);
    assert_eq!(t[1].ksteps, vec![Some(3), None, None]);
    assert_eq!(t[1].weights[0], vec![vec![8], vec![9], vec![0]]);
    assert_eq!(t[1].vectors[0].a, vec![vec![3], vec![0], vec![0]]);
    // No row/column skip: all rows and columns, same useful steps.
    let (t, skipped) = ws_program(&SystolicParams { rowcol_skip: false, ..ws(3, 3) }, &g);
    assert_eq!(skipped, 2);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].cols, vec![Some(0), Some(1), Some(2)]);
    assert_eq!(t[0].weights[1], vec![vec![8], vec![0], vec![9]]);
    let rows: Vec<_> = t[0].vectors.iter().map(|v| (v.row, v.last)).collect();
    assert_eq!(rows, vec![(0, false), (1, false), (2, true)]);
}

#[test]
fn ws_program_blocks_lanes_and_empty() {
    // Column blocks in order; a block with no useful step has no tile.
    // A = [1 0]; column 0 uses step 0; column 1 has B only at k = 1.
    let g = gemm(vec![vec![1, 0]], vec![vec![1, 0], vec![0, 1]]);
    let (t, skipped) = ws_program(&ws(1, 1), &g);
    assert_eq!(skipped, 1 + 2);
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].cols.clone(), t[0].ksteps.clone()), (vec![Some(0)], vec![Some(0)]));
    assert_eq!(run(&ws(1, 1), &g).c, vec![vec![1, 0]]);
    // Two column blocks, column-block-major, the last one short.
    let g = gemm(vec![vec![1, 1]], vec![vec![1, 2, 3], vec![4, 5, 6]]);
    let (t, _) = ws_program(&ws(1, 2), &g);
    let order: Vec<_> = t.iter().map(|x| (x.cols.clone(), x.ksteps.clone())).collect();
    assert_eq!(
        order,
        vec![
            (vec![Some(0), Some(1)], vec![Some(0)]),
            (vec![Some(0), Some(1)], vec![Some(1)]),
            (vec![Some(2), None], vec![Some(0)]),
            (vec![Some(2), None], vec![Some(1)]),
        ]
    );
    // Lanes: L = 2, K = 3: step 1 covers K index 2 and a zero lane.
    let c = SystolicParams { lanes: 2, channel_bits: 16, ..ws(1, 1) };
    let g = gemm(vec![vec![1, 2, 3]], vec![vec![4], vec![5], vec![6]]);
    let (t, skipped) = ws_program(&c, &g);
    assert_eq!(skipped, 0);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].weights.clone(), t[0].vectors[0].a.clone()), (vec![vec![vec![4, 5]]], vec![vec![1, 2]]));
    assert_eq!((t[1].weights.clone(), t[1].vectors[0].a.clone()), (vec![vec![vec![6, 0]]], vec![vec![3, 0]]));
    let o = run(&c, &g);
    // Issues at 1 and 4 (as in ws_single_pe); lane 1 of step 1 gated.
    assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products), (vec![vec![32]], 7, 3, 1));
    // No listed row: no tile, C = C0, cycles 0; every step of the
    // column block counts as skipped.
    let g = Gemm { a: vec![vec![0, 0]], b: vec![vec![1], vec![2]], c0: Some(vec![vec![7]]) };
    let (t, skipped) = ws_program(&ws(1, 1), &g);
    assert!(t.is_empty());
    assert_eq!(skipped, 2);
    let o = run(&ws(1, 1), &g);
    assert_eq!(o, Outcome { c: vec![vec![7]], cycles: 0, useful_macs: 0, gated_products: 0, skipped_ksteps: 2 });
    // Without load_filter nothing is skipped, and still no tile.
    let c = SystolicParams { load_filter: false, ..ws(1, 1) };
    assert_eq!(ws_program(&c, &g), (vec![], 0));
}

/// C played through the WS program: each vector's output row is
/// `sum_i sum_l a[i][l] * weights[i][j][l]`, added to the running sum
/// (C0 or zero first), wrapped (the `out_c0_i` accumulation).
fn ws_replay(cfg: &SystolicParams, g: &Gemm, tiles: &[WsTile]) -> Vec<Vec<i64>> {
    let n = g.b[0].len();
    let mut c: Vec<Vec<i64>> = match &g.c0 {
        Some(c0) => c0.clone(),
        None => vec![vec![0; n]; g.a.len()],
    };
    for t in tiles {
        for v in &t.vectors {
            for (j, col) in t.cols.iter().enumerate() {
                let Some(col) = col else { continue };
                let mut s = c[v.row][*col] as i128;
                for (i, a_row) in v.a.iter().enumerate() {
                    for (ln, &a) in a_row.iter().enumerate() {
                        s += a as i128 * t.weights[i][j][ln] as i128;
                    }
                }
                c[v.row][*col] = wrap(cfg, s);
            }
        }
    }
    c
}

#[test]
fn ws_random_against_reference() {
    // A small LCG; about half the values zero so every filter has work.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for case in 0..300 {
        let (rows, cols) = (1 + next(4) as u32, 1 + next(4) as u32);
        let lanes = [1u32, 2, 4][next(3) as usize];
        let c = SystolicParams {
            lanes,
            channel_bits: 8 * lanes,
            acc_bits: [16u32, 32][next(2) as usize],
            pipeline: next(3) as u32,
            gating: next(2) == 0,
            load_filter: next(2) == 0,
            rowcol_skip: next(2) == 0,
            ..ws(rows, cols)
        };
        let (m, k, n) = (1 + next(5) as usize, 1 + next(7) as usize, 1 + next(5) as usize);
        let mut val = || if next(2) == 0 { 0 } else { next(256) as i64 - 128 };
        let a: Vec<Vec<i64>> = (0..m).map(|_| (0..k).map(|_| val()).collect()).collect();
        let b: Vec<Vec<i64>> = (0..k).map(|_| (0..n).map(|_| val()).collect()).collect();
        let c0 = (next(2) == 0).then(|| (0..m).map(|_| (0..n).map(|_| next(2001) as i64 - 1000).collect()).collect());
        let g = Gemm { a, b, c0 };
        let o = run(&c, &g);
        let (tiles, skipped) = ws_program(&c, &g);
        assert_eq!(o.c, reference_c(&c, &g), "case {case}");
        assert_eq!(ws_replay(&c, &g, &tiles), o.c, "case {case}");
        assert_eq!(o.skipped_ksteps, skipped);
        // Every non-zero product is in exactly one tile, whatever the
        // filters drop.
        let nz: u64 = (0..m)
            .flat_map(|i| (0..k).flat_map(move |kk| (0..n).map(move |j| (i, kk, j))))
            .filter(|&(i, kk, j)| g.a[i][kk] != 0 && g.b[kk][j] != 0)
            .count() as u64;
        assert_eq!(o.useful_macs, nz, "case {case}");
        let (r, cc, l, p) = (rows as u64, cols as u64, lanes as u64, c.pipeline as u64);
        let nv: u64 = tiles.iter().map(|t| t.vectors.len() as u64).sum();
        assert_eq!(o.gated_products, if c.gating { nv * r * cc * l - nz } else { 0 }, "case {case}");
        // Closed form of the schedule: tile 0's first vector issues at
        // R; tile t+1's at the later of (its weights, R + C after tile
        // t's first issue, then R rows) and (tile t's last issue + 1).
        let per_tile = tiles.first().map_or(0, |t| t.vectors.len() as u64);
        let mut first = r;
        for _ in 1..tiles.len() {
            first = (first + 2 * r + cc).max(first + per_tile);
        }
        let want = if tiles.is_empty() { 0 } else { first + per_tile - 1 + r + cc + p + 1 };
        assert_eq!(o.cycles, want, "case {case}");
    }
}

#[test]
fn os_ignores_ws() {
    // dataflow "os" still runs the step program.
    let g = gemm(vec![vec![1, 2], vec![3, 4], vec![5, 6]], vec![vec![1, 2], vec![3, 4]]);
    let os = run(&cfg(2, 2), &g);
    let w = run(&ws(2, 2), &g);
    assert_eq!(os.c, w.c);
    let (_, _, _, skipped) = simulate(&cfg(2, 2), &program(&cfg(2, 2), &g));
    assert_eq!(os.skipped_ksteps, skipped);
    assert_ne!(os.cycles, w.cycles);
}

// ---- floating point (dataflow = ws) ----
//
// Patterns used below: fp16 1.0 = 0x3C00, 2.0 = 0x4000, 3.0 = 0x4200,
// 0.5 = 0x3800, -1.0 = 0xBC00, +Inf = 0x7C00, -Inf = 0xFC00, a NaN 0x7E00,
// -0 = 0x8000; bf16 1.0 = 0x3F80, 2.0 = 0x4000, 2^24 = 0x4B80, 2^-16 =
// 0x3780, -2^-17 = 0xB700, 1.5 * 2^-17 = 0x3740, the smallest subnormal
// 2^-133 = 0x0001, the largest finite 0x7F7F; binary32 1.0 = 0x3F800000,
// 4.0 = 0x40800000, 2^24 = 0x4B800000, 2^24 + 2 = 0x4B800001.

use super::fp::{FpType, INF, NAN};
use super::reference::{lane_tree, reference_fp};
use crate::rng::Rng;
use gpurtl_params::BlockParams;

/// A floating-point WS grid: R x C, `lanes` lanes, pipeline 0.
fn fpc(t: ElemType, u: ElemType, rows: u32, cols: u32, lanes: u32) -> SystolicParams {
    SystolicParams { a_type: t, b_type: u, lanes, channel_bits: 16 * lanes, acc_bits: 32, ..ws(rows, cols) }
}

/// The element's value, decoded through host floats (not the model's
/// decoder): bf16 as the top half of an f32, E5M2 as the top byte of an
/// fp16, fp16 and E4M3 by the spec's formula.
fn host_decode(t: ElemType, bits: i64) -> f64 {
    let formula = |bits: u32, eb: u32, mb: u32, bias: i32, ieee: bool| -> f64 {
        let s = if (bits >> (eb + mb)) & 1 == 1 { -1.0 } else { 1.0 };
        let e = (bits >> mb) & ((1 << eb) - 1);
        let m = bits & ((1 << mb) - 1);
        let emax = (1 << eb) - 1;
        if ieee && e == emax {
            return if m == 0 { s * f64::INFINITY } else { f64::NAN };
        }
        if !ieee && e == emax && m == (1 << mb) - 1 {
            return f64::NAN;
        }
        let frac = m as f64 / (1u32 << mb) as f64;
        if e == 0 {
            s * frac * 2f64.powi(1 - bias)
        } else {
            s * (1.0 + frac) * 2f64.powi(e as i32 - bias)
        }
    };
    let b = bits as u32;
    match t {
        ElemType::Bf16 => f32::from_bits(b << 16) as f64,
        ElemType::Fp16 => formula(b, 5, 10, 15, true),
        ElemType::Fp8e4m3 => formula(b, 4, 3, 7, false),
        ElemType::Fp8e5m2 => formula(b << 8, 5, 10, 15, true),
        _ => unreachable!(),
    }
}

/// -0 -> +0, NaN -> 0x7FC00000.
fn host_canon(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(NAN)
    } else if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// The spec's product with host arithmetic: a zero operand gives +0; else
/// the f64 product (exact: at most 11 x 11 significant bits) rounded once
/// by `as f32` (IEEE nearest even, subnormals kept), canonical.
fn host_mul(t: ElemType, a: i64, u: ElemType, b: i64) -> f32 {
    let (x, y) = (host_decode(t, a), host_decode(u, b));
    if x == 0.0 || y == 0.0 {
        return 0.0;
    }
    host_canon((x * y) as f32)
}

fn host_add(x: f32, y: f32) -> f32 {
    host_canon(x + y)
}

/// The balanced tree, by recursive halves of the list padded with +0 to a
/// power of two.
fn host_tree(p: &[f32]) -> f32 {
    let mut v = p.to_vec();
    v.resize(p.len().next_power_of_two(), 0.0);
    fn half(v: &[f32]) -> f32 {
        if v.len() == 1 {
            v[0]
        } else {
            let (l, r) = v.split_at(v.len() / 2);
            host_add(half(l), half(r))
        }
    }
    half(&v)
}

/// C by the spec's definition in host arithmetic, as binary32 patterns.
fn host_c(cfg: &SystolicParams, g: &Gemm) -> Vec<Vec<i64>> {
    let l = cfg.lanes as usize;
    let (m, k, n) = (g.a.len(), g.b.len(), g.b[0].len());
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let c0 = g.c0.as_ref().map_or(0.0, |c| f32::from_bits(c[i][j] as u32));
                    let mut acc = host_add(c0, 0.0);
                    for s in 0..k.div_ceil(l) {
                        let p: Vec<f32> = (s * l..s * l + l)
                            .map(|kk| if kk < k { host_mul(cfg.a_type, g.a[i][kk], cfg.b_type, g.b[kk][j]) } else { 0.0 })
                            .collect();
                        acc = host_add(acc, host_tree(&p));
                    }
                    acc.to_bits() as i64
                })
                .collect()
        })
        .collect()
}

/// C played through the WS program as the floating-point grid computes it:
/// the driver gives each vector's column j the running sum (the previous
/// tile of the column block's result for the row, else C0's pattern as
/// given, else +0); PE row i adds the lane tree of the vector's lanes of
/// row i and the weights of (i, j). Elements no tile covers are start(C0).
fn ws_replay_fp(cfg: &SystolicParams, g: &Gemm, tiles: &[WsTile]) -> Vec<Vec<i64>> {
    let (ta, tb) = (FpType::of(cfg.a_type).unwrap(), FpType::of(cfg.b_type).unwrap());
    let (m, n) = (g.a.len(), g.b[0].len());
    let mut run: Vec<Vec<Option<u32>>> = vec![vec![None; n]; m];
    for t in tiles {
        for v in &t.vectors {
            for (j, col) in t.cols.iter().enumerate() {
                let Some(col) = *col else { continue };
                let mut psum = run[v.row][col].unwrap_or_else(|| g.c0.as_ref().map_or(0, |c| c[v.row][col] as u32));
                for (i, a_row) in v.a.iter().enumerate() {
                    let a: Vec<u32> = a_row.iter().map(|&x| x as u32).collect();
                    let w: Vec<u32> = t.weights[i][j].iter().map(|&x| x as u32).collect();
                    psum = fp::add(psum, fp::step(ta, tb, &a, &w));
                }
                run[v.row][col] = Some(psum);
            }
        }
    }
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| run[i][j].unwrap_or_else(|| fp::start(g.c0.as_ref().map_or(0, |c| c[i][j] as u32))) as i64)
                .collect()
        })
        .collect()
}

/// C of one GEMM on `cfg`, checked against the host definition and the
/// replay of the program.
fn fp_c(cfg: &SystolicParams, a: Vec<Vec<i64>>, b: Vec<Vec<i64>>, c0: Option<Vec<Vec<i64>>>) -> Vec<Vec<i64>> {
    let g = Gemm { a, b, c0 };
    let o = run(cfg, &g);
    assert_eq!(o.c, reference_fp(cfg, &g));
    assert_eq!(o.c, host_c(cfg, &g), "host definition, {g:?}");
    assert_eq!(o.c, ws_replay_fp(cfg, &g, &ws_program(cfg, &g).0), "replay, {g:?}");
    o.c
}

#[test]
fn fp_reference_hand_cases() {
    use ElemType::{Bf16, Fp16, Fp8e4m3, Fp8e5m2};
    let h = fpc(Fp16, Fp16, 1, 1, 1);
    let one = |x: i64| vec![vec![x]];
    // 1*3 + 2*0.5 = 4.
    assert_eq!(fp_c(&h, vec![vec![0x3C00, 0x4000]], vec![vec![0x4200], vec![0x3800]], None), one(0x4080_0000));
    // A zero times Inf or NaN is +0 (IEEE would give NaN); a C0 of -0
    // starts at +0: C is +0, not -0.
    assert_eq!(fp_c(&h, one(0x8000), one(0x7C00), Some(one(0x8000_0000))), one(0));
    assert_eq!(fp_c(&h, one(0x0000), one(0x7E00), None), one(0));
    assert_eq!(fp_c(&h, one(0x7C00), one(0x8000), None), one(0));
    // -0 C0 with a non-zero product: the product.
    assert_eq!(fp_c(&h, one(0xBC00), one(0x3C00), Some(one(0x8000_0000))), one(0xBF80_0000));
    // 1 + (-1) = +0, never -0.
    assert_eq!(fp_c(&h, vec![vec![0x3C00, 0xBC00]], vec![vec![0x3C00], vec![0x3C00]], None), one(0));
    // NaN: any NaN operand (other payloads too) gives 0x7FC00000; a
    // signalling-NaN C0 starts as 0x7FC00000.
    assert_eq!(fp_c(&h, vec![vec![0x7E01, 0x3C00]], vec![vec![0x3C00], vec![0x3C00]], None), one(NAN as i64));
    assert_eq!(fp_c(&h, one(0x8000), one(0x3C00), Some(one(0x7F80_0001))), one(NAN as i64));
    // Inf: Inf * -1 = -Inf; Inf + -Inf = NaN; -Inf C0 stays.
    assert_eq!(fp_c(&h, one(0x7C00), one(0xBC00), None), one(0xFF80_0000));
    assert_eq!(fp_c(&h, vec![vec![0x7C00, 0xFC00]], vec![vec![0x3C00], vec![0x3C00]], None), one(NAN as i64));
    assert_eq!(fp_c(&h, one(0x3C00), one(0x3C00), Some(one(0xFF80_0000))), one(0xFF80_0000));
    // Subnormal inputs: fp16 2^-24 * 2^-24 = 2^-48, a binary32 normal.
    assert_eq!(fp_c(&h, one(0x0001), one(0x0001), None), one(0x2780_0000));
    // Subnormal results (bf16): 2^-133 * 1 = 2^-133 = 2^16 * 2^-149;
    // * 2^-16 = 2^-149 (the smallest); * -2^-17 = -2^-150, a tie that
    // rounds to the even 0, canonical +0; * 1.5 * 2^-17 = 0.75 * 2^-149,
    // rounds to 2^-149; plus a 2^-149 C0: 2^-148, nothing flushed.
    let bb = fpc(Bf16, Bf16, 1, 1, 1);
    assert_eq!(fp_c(&bb, one(0x0001), one(0x3F80), None), one(0x0001_0000));
    assert_eq!(fp_c(&bb, one(0x0001), one(0x3780), None), one(0x0000_0001));
    assert_eq!(fp_c(&bb, one(0x0001), one(0xB700), None), one(0));
    assert_eq!(fp_c(&bb, one(0x0001), one(0x3740), None), one(0x0000_0001));
    assert_eq!(fp_c(&bb, one(0x0001), one(0x3780), Some(one(0x0000_0001))), one(0x0000_0002));
    // bf16 overflow: the largest finite times 2 is Inf; max + (-max) = +0.
    assert_eq!(fp_c(&bb, one(0x7F7F), one(0x4000), None), one(INF as i64));
    assert_eq!(fp_c(&bb, vec![vec![0x7F7F, 0x7F7F]], vec![vec![0x3F80], vec![0xBF80]], None), one(0));
    // E4M3 x E5M2: 448 * 57344 = 1.53125 * 2^24, exact; E4M3 0x7F is NaN,
    // 0x78 (256) is finite.
    let e = fpc(Fp8e4m3, Fp8e5m2, 1, 1, 1);
    assert_eq!(fp_c(&e, one(0x7E), one(0x7B), None), one(0x4BC4_0000));
    assert_eq!(fp_c(&e, one(0x7F), one(0x3C), None), one(NAN as i64));
    assert_eq!(fp_c(&e, one(0x78), one(0x3C), None), one(0x4380_0000));
    // Order of the adds. Lanes 4: (2^24 + 1) + (1 + 1) = 2^24 + 2 (one
    // lane after another would give 2^24: each + 1 is a tie to even).
    let ones4 = vec![vec![0x3F80]; 4];
    assert_eq!(fp_c(&fpc(Bf16, Bf16, 1, 1, 4), vec![vec![0x4B80, 0x3F80, 0x3F80, 0x3F80]], ones4.clone(), None), one(0x4B80_0001));
    // Lanes 1: the k-steps one after another: 2^24 + 1 + 1 + 1 = 2^24.
    assert_eq!(fp_c(&bb, vec![vec![0x4B80, 0x3F80, 0x3F80, 0x3F80]], ones4.clone(), None), one(0x4B80_0000));
    // Lanes 3: (p0 + p1) + p2: (1 + 1) + 2^24 = 2^24 + 2, but
    // (2^24 + 1) + 1 = 2^24.
    let l3 = fpc(Bf16, Bf16, 1, 1, 3);
    assert_eq!(fp_c(&l3, vec![vec![0x3F80, 0x3F80, 0x4B80]], ones4[..3].to_vec(), None), one(0x4B80_0001));
    assert_eq!(fp_c(&l3, vec![vec![0x4B80, 0x3F80, 0x3F80]], ones4[..3].to_vec(), None), one(0x4B80_0000));
    // Lanes 2, K = 4: t0 = 1 + 1 = 2, t1 = 2^24 + 1 = 2^24; acc 2 + 2^24.
    let l2 = fpc(Bf16, Bf16, 1, 1, 2);
    assert_eq!(fp_c(&l2, vec![vec![0x3F80, 0x3F80, 0x4B80, 0x3F80]], ones4.clone(), None), one(0x4B80_0001));
    // Lanes 2, K = 3: step 1 is 1 and a padding +0: 2^24, then + 1 = 2^24.
    assert_eq!(fp_c(&l2, vec![vec![0x4B80, 0x3F80, 0x3F80]], ones4[..3].to_vec(), None), one(0x4B80_0000));
    // C0 is where the sum begins: (1 + 1) + 2^24 = 2^24 + 2 (adding C0 at
    // the end would give (1 + 2^24) + 1 = 2^24).
    assert_eq!(fp_c(&bb, vec![vec![0x3F80, 0x4B80]], ones4[..2].to_vec(), Some(one(0x3F80_0000))), one(0x4B80_0001));
    // A 2x2 grid, several tiles and k blocks: 3x5 by 5x3 of small values.
    let g2 = fpc(Fp16, Fp16, 2, 2, 1);
    let a: Vec<Vec<i64>> = (0..3).map(|i| (0..5).map(|k| [0x3C00, 0x4000, 0xBC00, 0x3800, 0x8000][(i + k) % 5]).collect()).collect();
    let b: Vec<Vec<i64>> = (0..5).map(|k| (0..3).map(|j| [0x4200, 0x0000, 0x3C00, 0xB800][(k + 2 * j) % 4]).collect()).collect();
    let c = fp_c(&g2, a.clone(), b.clone(), Some(vec![vec![0x3F80_0000, 0x8000_0000, 0x4000_0000]; 3]));
    // The values are small integers and halves, so every partial sum is
    // exact and C is the plain sum in any order:
    let want: Vec<Vec<i64>> = (0..3)
        .map(|i| {
            (0..3)
                .map(|j| {
                    let c0 = [1.0f32, 0.0, 2.0][j];
                    let s = (0..5).fold(c0, |s, k| s + host_decode(Fp16, a[i][k]) as f32 * host_decode(Fp16, b[k][j]) as f32);
                    host_canon(s).to_bits() as i64
                })
                .collect()
        })
        .collect();
    assert_eq!(c, want);
}

#[test]
fn fp_lane_tree_is_fp_step() {
    // The reference's allocation-free tree against fp::step.
    let mut rng = Rng::new(27);
    let types = [ElemType::Bf16, ElemType::Fp16, ElemType::Fp8e4m3, ElemType::Fp8e5m2];
    for _ in 0..4000 {
        let (t, u) = (*rng.pick(&types), *rng.pick(&types));
        let (ft, fu) = (FpType::of(t).unwrap(), FpType::of(u).unwrap());
        let lanes = 1 + rng.below(8) as usize;
        let a: Vec<u32> = (0..lanes).map(|_| rng.below(1 << t.bits()) as u32).collect();
        let b: Vec<u32> = (0..lanes).map(|_| rng.below(1 << u.bits()) as u32).collect();
        assert_eq!(lane_tree(ft, fu, lanes, |l| a[l], |l| b[l]), fp::step(ft, fu, &a, &b));
    }
}

/// A random element pattern: mostly moderate normals of either sign, some
/// subnormals, and now and then Inf or NaN when `specials`.
fn rand_elem(rng: &mut Rng, t: ElemType, specials: bool) -> i64 {
    let (eb, mb) = t.fp_fields();
    let sign = (rng.below(2) as i64) << (eb + mb);
    let bias = (1i64 << (eb - 1)) - 1;
    let man = rng.below(1 << mb) as i64;
    let exp = match rng.below(20) {
        0 => 0,                                    // subnormal (or zero)
        1 if specials => (1 << eb) - 1,            // Inf/NaN (E4M3: large finite or NaN)
        _ => (bias - 2 + rng.below(5) as i64).max(1), // 2^-2 .. 2^2
    };
    sign | (exp << mb) | man
}

#[test]
fn fp_zero_skipping_is_exact() {
    // Block-sparse random matrices with zeros of both signs: C and the
    // counters are the same with every skipping parameter on or off, the
    // useful count is the direct count of (both non-zero) products, the
    // counters and cycles do not depend on the zeros' signs, and the program
    // replays to C.
    let mut rng = Rng::new(0x5eed);
    let types = [ElemType::Bf16, ElemType::Fp16, ElemType::Fp8e4m3, ElemType::Fp8e5m2];
    for case in 0..60 {
        let (t, u) = (*rng.pick(&types), *rng.pick(&types));
        let (rows, cols) = (1 + rng.below(3) as u32, 1 + rng.below(3) as u32);
        let lanes = [1u32, 2, 3, 4][rng.below(4) as usize];
        let (m, k, n) = (1 + rng.below(6) as usize, 1 + rng.below(9) as usize, 1 + rng.below(6) as usize);
        let specials = rng.chance(30);
        // 2x2 blocks zeroed (each zero +0 or -0) with probability 1/2.
        let sparse = |rng: &mut Rng, r: usize, c: usize, ty: ElemType| -> Vec<Vec<i64>> {
            let dead: Vec<Vec<bool>> = (0..r.div_ceil(2)).map(|_| (0..c.div_ceil(2)).map(|_| rng.chance(50)).collect()).collect();
            (0..r)
                .map(|i| {
                    (0..c)
                        .map(|j| {
                            if dead[i / 2][j / 2] || rng.chance(10) {
                                (rng.below(2) as i64) << (ty.bits() - 1)
                            } else {
                                rand_elem(rng, ty, specials)
                            }
                        })
                        .collect()
                })
                .collect()
        };
        let a = sparse(&mut rng, m, k, t);
        let b = sparse(&mut rng, k, n, u);
        let c0 = rng.chance(50).then(|| {
            (0..m).map(|_| (0..n).map(|_| [0, 0x8000_0000, 0x3F80_0000, 0xC000_0000, 0x0000_0003][rng.below(5) as usize]).collect()).collect()
        });
        let g = Gemm { a, b, c0 };
        // The same GEMM with every -0 made +0, and with every +0 made -0.
        let resign = |g: &Gemm, neg: bool| {
            let f = |mat: &Vec<Vec<i64>>, ty: ElemType| -> Vec<Vec<i64>> {
                mat.iter().map(|r| r.iter().map(|&x| if ty.is_zero(x) { (neg as i64) << (ty.bits() - 1) } else { x }).collect()).collect()
            };
            Gemm { a: f(&g.a, t), b: f(&g.b, u), c0: g.c0.clone() }
        };
        let nz: u64 = (0..m)
            .flat_map(|i| (0..k).flat_map(move |kk| (0..n).map(move |j| (i, kk, j))))
            .filter(|&(i, kk, j)| !t.is_zero(g.a[i][kk]) && !u.is_zero(g.b[kk][j]))
            .count() as u64;
        let want = host_c(&fpc(t, u, rows, cols, lanes), &g);
        for bits in 0..8u32 {
            let c = SystolicParams {
                load_filter: bits & 1 != 0,
                rowcol_skip: bits & 2 != 0,
                gating: bits & 4 != 0,
                pipeline: rng.below(4) as u32,
                ..fpc(t, u, rows, cols, lanes)
            };
            let o = run(&c, &g);
            assert_eq!(o.c, want, "case {case} params {bits}");
            let (tiles, skipped) = ws_program(&c, &g);
            assert_eq!(ws_replay_fp(&c, &g, &tiles), want, "case {case} params {bits}");
            assert_eq!(o.skipped_ksteps, skipped);
            assert_eq!(o.useful_macs, nz, "case {case} params {bits}");
            let nv: u64 = tiles.iter().map(|t| t.vectors.len() as u64).sum();
            let slots = nv * (rows * cols * lanes) as u64;
            assert_eq!(o.gated_products, if c.gating { slots - nz } else { 0 }, "case {case} params {bits}");
            for neg in [false, true] {
                let h = resign(&g, neg);
                assert_eq!(run(&c, &h), o, "case {case} params {bits}: the zeros' signs");
                assert_eq!(ws_program(&c, &h).0.len(), tiles.len());
            }
        }
    }
}

#[test]
fn fp_negative_zero_is_skipped() {
    // fp16 on a 1x1 grid: A's column 1 is -0 throughout and row 1 is all -0;
    // B's column 1 is all -0. rowcol_skip drops A's row 1 and B's column 1,
    // the load filter skips step 1: one tile (column 0, step 0) of one
    // vector (row 0).
    let c = fpc(ElemType::Fp16, ElemType::Fp16, 1, 1, 1);
    let g = Gemm {
        a: vec![vec![0x3C00, 0x8000], vec![0x8000, 0x8000]],
        b: vec![vec![0x4000, 0x8000], vec![0x4000, 0x8000]],
        c0: Some(vec![vec![0x8000_0000, 0x3F80_0000], vec![0x8000_0000, 0x7F80_0002]]),
    };
    let (t, skipped) = ws_program(&c, &g);
    assert_eq!(skipped, 1);
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].cols.clone(), t[0].ksteps.clone(), t[0].vectors.len()), (vec![Some(0)], vec![Some(0)], 1));
    let o = run(&c, &g);
    // C: 1*2 from +0; the dropped elements are start(C0): -0 -> +0, a NaN
    // -> 0x7FC00000, 1.0 as it is.
    assert_eq!(o.c, vec![vec![0x4000_0000, 0x3F80_0000], vec![0, NAN as i64]]);
    assert_eq!((o.useful_macs, o.gated_products), (1, 0));
    // Without the filters every -0 product is gated, not useful.
    let off = SystolicParams { load_filter: false, rowcol_skip: false, ..c.clone() };
    let o2 = run(&off, &g);
    assert_eq!(o2.c, o.c);
    assert_eq!((o2.useful_macs, o2.gated_products, o2.skipped_ksteps), (1, 8 - 1, 0));
    // The output-stationary sequencer and loader test zeros the same way
    // (the OS floating-point grid has no C0: the dropped elements are +0).
    let os = SystolicParams { dataflow: Dataflow::Os, c0_add: false, ..c.clone() };
    os.validate().unwrap();
    let g = Gemm { c0: None, ..g };
    let o3 = run(&os, &g);
    assert_eq!(o3.c, vec![vec![0x4000_0000, 0], vec![0, 0]]);
    assert_eq!((o3.useful_macs, o3.gated_products, o3.skipped_ksteps), (1, 0, 1));
    assert_eq!(program(&os, &g).len(), 1);
}

#[test]
fn fp_ws_timing_driver_rule() {
    // fp16, 1x1 grid, lanes 1, pipeline 0 (D = 0); M = 2, K = 2, N = 1,
    // dense: one column block, tiles t0 (step 0) and t1 (step 1), two
    // vectors each (rows 0, 1). By the WS cycle rules with the driver's rule:
    //  0: weight t0 (wcnt 1); t0v0 accepted.
    //  1: t0v0 issues (first: wcnt 0, wblock 1, open); row out at
    //     1 + R + C + D = 3. t0v1 accepted.
    //  2: t0v1 issues (last; wblock 1 -> 0); out at 4. t1v0 depends on
    //     t0v0's row (out at 3): not offered.
    //  3: weight t1 (wcnt 1). t0v0's row transferred; t1v0 still waits.
    //  4: t1v0 accepted (the cycle after 3).
    //  5: t1v0 issues (wcnt == R; first); out at 7. t1v1 depends on t0v1's
    //     row (out at 4): accepted.
    //  6: t1v1 issues; out at 8.   cycles = 8 + 1 = 9.
    // (i8 with the same shape: t1v0 is accepted at 2 and issues at 4, the
    // cycle after t1's weight, last row out at 7: 8 cycles.)
    let dense = |t: ElemType, k: usize, m: usize| {
        let one = if t.is_float() { FpType::of(t).unwrap().from_f64(1.0).unwrap() as i64 } else { 1 };
        Gemm { a: vec![vec![one; k]; m], b: vec![vec![one]; k], c0: None }
    };
    let f = fpc(ElemType::Fp16, ElemType::Fp16, 1, 1, 1);
    let o = run(&f, &dense(ElemType::Fp16, 2, 2));
    assert_eq!(o.c, vec![vec![0x4000_0000]; 2]);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products), (9, 4, 0));
    assert_eq!(run(&ws(1, 1), &dense(ElemType::I8, 2, 2)).cycles, 8);
    // fp8e4m3, 1x1, lanes 2, pipeline 1: D = 1 + ceil(log2 2) = 2. K = 4,
    // M = 1: tiles t0 (step 0) and t1 (step 1), one vector each.
    //  0: weight t0; t0v0 accepted.   1: t0v0 issues; out at 1+1+1+2 = 5.
    //  2: wblock 1 -> 0.   3: weight t1.
    //  6: t1v0 accepted (after t0v0's row at 5).   7: issues; out at 11.
    //  cycles = 12. (i8, D = 1: issues at 1 and 4, out at 7: 8 cycles.)
    let e = SystolicParams { pipeline: 1, channel_bits: 16, ..fpc(ElemType::Fp8e4m3, ElemType::Fp8e4m3, 1, 1, 2) };
    assert_eq!(e.depth(), 2);
    let o = run(&e, &dense(ElemType::Fp8e4m3, 4, 1));
    assert_eq!((o.c.clone(), o.cycles, o.useful_macs), (vec![vec![0x4080_0000]], 12, 4));
    let i = SystolicParams { a_type: ElemType::I8, b_type: ElemType::I8, ..e.clone() };
    assert_eq!(run(&i, &dense(ElemType::I8, 4, 1)).cycles, 8);
    // fp16, 2x2 grid, pipeline 2 (D = 2); M = 3, K = 3, N = 2: tiles t0
    // (steps 0, 1) and t1 (step 2 and padding), 3 vectors each.
    //  0, 1: weights of t0.   2, 3, 4: t0 v0..v2 issue; out at 2+2+2+2 = 8,
    //  9, 10 (wblock 3 at 2, 0 at 5).   6, 7: weights of t1.
    //  9: t1v0 accepted (after 8); 10: issues (out 16); t1v1 accepted (after
    //  9); 11: issues; t1v2 accepted; 12: issues, out at 18. cycles = 19.
    //  (i8: t1v0 issues at 8, the last row out at 16: 17 cycles, as in
    //  ws_grid_2x2_dense_m3.)
    let g2 = SystolicParams { pipeline: 2, ..fpc(ElemType::Fp16, ElemType::Fp16, 2, 2, 1) };
    let mut g = dense(ElemType::Fp16, 3, 3);
    for r in g.b.iter_mut() {
        r.push(r[0]);
    }
    let o = run(&g2, &g);
    assert_eq!((o.cycles, o.useful_macs, o.gated_products), (19, 18, 6));
    let i2 = SystolicParams { a_type: ElemType::I8, b_type: ElemType::I8, ..g2.clone() };
    let mut gi = dense(ElemType::I8, 3, 3);
    for r in gi.b.iter_mut() {
        r.push(1);
    }
    assert_eq!(run(&i2, &gi).cycles, 17);
    // Two column blocks of one tile each (N = 2 on a 1x1 grid, K = 1): no
    // tile continues a block, so nothing waits: as i8 at the same depth.
    let f0 = fpc(ElemType::Fp16, ElemType::Fp16, 1, 1, 1);
    let g = Gemm { a: vec![vec![0x3C00]], b: vec![vec![0x3C00, 0x3C00]], c0: None };
    assert_eq!(run(&f0, &g).cycles, run(&ws(1, 1), &gemm(vec![vec![1]], vec![vec![1, 1]])).cycles);
}

// ---- floating point, fp_stages (dataflow = ws) ----
//
// "The floating-point grid", "Parameters" and "Timing": H = fp_stages + 1
// (the cycles of one binary32 add), D = pipeline + fp_stages +
// ceil(log2 lanes)·H (fp_stages more inside each product); a vector issued
// at s has its row offered (the output always ready:
// transferred) at s + L, L = R·H + C + D; at most L + 1 vectors are issued
// and not yet transferred (which never binds with the output always ready);
// a tile's first vector sets wblock = W = (R - 1)·H + C. The rest is the WS
// cycle rules with the driver's rule. Counting used below: a first vector
// issued at s sets wblock = W, which counts down in s+1 ..= s+W, so the
// weight port is ready again from s + W + 1, and R weight rows give
// wcnt == R from s + W + R + 1. Ones: fp16 1.0 = 0x3C00; binary32 2.0 =
// 0x40000000, 4.0 = 0x40800000, 8.0 = 0x41000000.

/// `c` with `fp_stages` = `f`, validated (H = f + 1).
fn stages(c: &SystolicParams, f: u32) -> SystolicParams {
    let s = SystolicParams { fp_stages: f, ..c.clone() };
    s.validate().unwrap();
    assert_eq!(s.hop(), f + 1);
    s
}

/// A dense GEMM of ones (the type's 1.0, or integer 1): M x K by K x N.
fn ones(t: ElemType, m: usize, k: usize, n: usize) -> Gemm {
    let one = if t.is_float() { FpType::of(t).unwrap().from_f64(1.0).unwrap() as i64 } else { 1 };
    Gemm { a: vec![vec![one; k]; m], b: vec![vec![one; n]; k], c0: None }
}

#[test]
fn fp_ws_fp_stages_1x1() {
    let f16 = ElemType::Fp16;
    // (a) fp16 1x1, lanes 1, pipeline 0: D = 0 + F + 0·H = F = H - 1
    // (F = fp_stages), L = H + 1 + D = 2H, W = 0·H + 1 = 1.
    // M = 2, K = 2, N = 1, dense: one column block, tiles t0 (step 0) and
    // t1 (step 1), two vectors each.
    //  0: weight t0 (wcnt 1); t0v0 accepted.
    //  1: t0v0 issues (first: wcnt 0, wblock 1, open); row at 1 + L = 2H + 1.
    //     t0v1 accepted.
    //  2: t0v1 issues (last; wblock 1 -> 0); row at 2H + 2. t1v0 depends on
    //     t0v0's row: offered from 2H + 2.
    //  3: weight t1 (wcnt 1).
    //  2H + 2: t1v0 accepted (2H + 2 >= 4: the weight is in).
    //  2H + 3: t1v0 issues (wcnt == R; first); row at 4H + 3. t1v1 depends
    //     on t0v1's row (2H + 2): accepted.
    //  2H + 4: t1v1 issues; row at 4H + 4.   cycles = 4H + 5: 9, 13, 17.
    // (H = 2: t0 rows at 5, 6; t1v0 accepted 6, issues 7, row 11; t1v1
    // issues 8, row 12; 13 cycles.)
    let base = fpc(f16, f16, 1, 1, 1);
    let g = ones(f16, 2, 2, 1);
    for (f, want) in [(0, 9), (1, 13), (2, 17), (3, 21), (4, 25), (5, 29)] {
        let c = stages(&base, f);
        assert_eq!(c.depth(), f);
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![0x4000_0000]; 2], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (want, 4, 0, 0), "fp_stages {f}");
    }
    // (b) fp16 1x1, lanes 2 (32-bit channels), pipeline 0: D = 0 + F + 1·H
    // = 2H - 1, L = H + 1 + 2H - 1 = 3H, W = 1. M = 2, K = 4 (steps 0, 1:
    // tiles t0, t1 of one step each), N = 1.
    //  0: weight t0; t0v0 accepted.
    //  1: t0v0 issues (first; wblock 1); row at 3H + 1. t0v1 accepted.
    //  2: t0v1 issues (last; wblock -> 0); row at 3H + 2.
    //  3: weight t1 (wcnt 1).
    //  3H + 2: t1v0 accepted (after t0v0's row at 3H + 1).
    //  3H + 3: t1v0 issues; row at 6H + 3. t1v1 accepted (after 3H + 2).
    //  3H + 4: t1v1 issues; row at 6H + 4.   cycles = 6H + 5: 11, 17, 23.
    let base = fpc(f16, f16, 1, 1, 2);
    let g = ones(f16, 2, 4, 1);
    for (f, want) in [(0, 11), (1, 17), (2, 23), (3, 29), (4, 35), (5, 41)] {
        let c = stages(&base, f);
        assert_eq!(c.depth(), f + (f + 1));
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![0x4080_0000]; 2], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs, o.gated_products), (want, 8, 0), "fp_stages {f}");
    }
    // The same at pipeline 1: D = 1 + F + H = 2H, L = 3H + 1. t0's rows at
    // 3H + 2, 3H + 3; t1v0 accepted 3H + 3, issues 3H + 4; t1v1 accepted
    // 3H + 4, issues 3H + 5, row at 6H + 6: cycles 6H + 7 = 13, 19, 25.
    let base = SystolicParams { pipeline: 1, ..base };
    for (f, want) in [(0, 13), (1, 19), (2, 25), (3, 31), (4, 37), (5, 43)] {
        let c = stages(&base, f);
        assert_eq!(c.depth(), 1 + f + (f + 1));
        assert_eq!(run(&c, &g).cycles, want, "fp_stages {f}");
    }
}

#[test]
fn fp_ws_fp_stages_2x2() {
    let f16 = ElemType::Fp16;
    // (c) fp16 2x2, lanes 1, pipeline 0: D = F = H - 1, L = 2H + 2 + H - 1
    // = 3H + 1, W = H + 2. M = 1, K = 2, N = 4: two column blocks of one
    // tile each (no tile continues a block: no driver's rule), so the
    // wblock shows alone.
    //  0, 1: weights t0 (wcnt 2 from 2); t0v0 accepted 0.
    //  2: t0v0 issues (first and last: wcnt 0, wblock H + 2); row at
    //     3H + 3. t1v0 (column block 1) accepted.
    //  3 ..= H + 4: wblock counts down to 0.
    //  H + 5, H + 6: weights t1; wcnt == 2 from H + 7.
    //  H + 7: t1v0 issues; row at 4H + 8.   cycles = 4H + 9: 13, 17, 21.
    // (With wblock R + C - 1 = 3 at every H, t1's weights would be in at
    // 6, 7, t1v0 would issue at 8 and its row would be at 3H + 9.)
    let base = fpc(f16, f16, 2, 2, 1);
    let g = ones(f16, 1, 2, 4);
    for (f, want) in [(0, 13), (1, 17), (2, 21), (3, 25), (4, 29), (5, 33)] {
        let o = run(&stages(&base, f), &g);
        assert_eq!(o.c, vec![vec![0x4000_0000; 4]], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs, o.gated_products), (want, 8, 0), "fp_stages {f}");
    }
    // i8 with the same shape (H = 1): as fp_stages 0.
    assert_eq!(run(&ws(2, 2), &ones(ElemType::I8, 1, 2, 4)).cycles, 13);
    // The credits: M = 12 vectors of one tile (K = 2, N = 2), more than
    // L + 1 = 3H + 2 (at most 11). Weights at 0, 1; v0 issues at 2 and v_i
    // at 2 + i back-to-back: in a cycle c the vectors issued and not yet
    // transferred are those issued in c - L ..= c - 1, at most L < L + 1,
    // so the credit never binds (a limit of R + C + D + 1 = H + 4 would
    // stall them when H > 1: 3H + 1 > H + 4). The last issues at 13, its
    // row at 13 + 3H + 1: cycles = 3H + 15 = 18, 21, 24.
    let g = ones(f16, 12, 2, 2);
    for (f, want) in [(0, 18), (1, 21), (2, 24), (3, 27), (4, 30), (5, 33)] {
        let o = run(&stages(&base, f), &g);
        assert_eq!(o.c, vec![vec![0x4000_0000; 2]; 12], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs), (want, 48), "fp_stages {f}");
    }
    // (d) fp16 2x2, lanes 2 (32-bit channels), pipeline 1: D = 1 + F + H
    // = 2H, L = 2H + 2 + 2H = 4H + 2, W = H + 2. M = 2, K = 8, N = 2: one
    // column block, steps 0..3 in tiles t0 (steps 0, 1) and t1 (2, 3), two
    // vectors each.
    //  0, 1: weights t0; t0v0 accepted 0.
    //  2: t0v0 issues (first; wblock H + 2); row at 4H + 4. t0v1 accepted.
    //  3: t0v1 issues (last); row at 4H + 5.
    //  H + 5, H + 6: weights t1; wcnt == 2 from H + 7.
    //  4H + 5: t1v0 accepted (after t0v0's row at 4H + 4).
    //  4H + 6: t1v0 issues (the weights are in: 4H + 6 >= H + 7); row at
    //     8H + 8. t1v1 accepted (after t0v1's row at 4H + 5).
    //  4H + 7: t1v1 issues; row at 8H + 9.  cycles = 8H + 10: 18, 26, 34.
    let base = SystolicParams { pipeline: 1, ..fpc(f16, f16, 2, 2, 2) };
    let g = ones(f16, 2, 8, 2);
    for (f, want) in [(0, 18), (1, 26), (2, 34), (3, 42), (4, 50), (5, 58)] {
        let c = stages(&base, f);
        assert_eq!(c.depth(), 1 + f + (f + 1));
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![0x4100_0000; 2]; 2], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (want, 32, 0, 0), "fp_stages {f}");
    }
}

#[test]
fn fp_ws_fp_stages_wblock_and_driver() {
    // (e) fp16 4x1, lanes 1, pipeline 0: D = F = H - 1, L = 4H + 1 + H - 1
    // = 5H, W = 3H + 1. M = 2, K = 8, N = 1: one column block, tiles t0
    // (steps 0..3) and t1 (steps 4..7), two vectors each: t1's first vector
    // waits for both its weights (the wblock) and t0v0's row (the driver's
    // rule).
    //  0..=3: weights t0; t0v0 accepted 0.
    //  4: t0v0 issues (first; wcnt 0, wblock 3H + 1); row at 5H + 4.
    //     t0v1 accepted.
    //  5: t0v1 issues (last); row at 5H + 5.
    //  3H + 6 ..= 3H + 9: weights t1 (ready from 4 + W + 1); wcnt == 4
    //     from 3H + 10.
    //  5H + 5: t1v0 accepted (after t0v0's row), held from 5H + 6.
    //  X = max(3H + 10, 5H + 6): t1v0 issues. H = 1: 13 (the weights bind,
    //     by 2); H = 2: 16 (both); H = 3: 21 (the driver's rule, by 2).
    //  t1v1 (offered from 5H + 6 <= X) is accepted at X, issues at X + 1;
    //     row at X + 1 + 5H.   cycles = X + 5H + 2: 20, 28, 38.
    // (H = 2: rows of t0 at 14, 15; wblock 7 at 4, 0 from 12; weights
    // 12..=15; t1v0 held from 16, issues 16, row 26; t1v1 issues 17, row
    // 27: 28 cycles. With wblock R + C - 1 = 4 the weights would be in at
    // 9..=12, but t1v0, held from 16, would still issue at 16: 28 cycles;
    // the wblock alone is shown by (c) in fp_ws_fp_stages_2x2.)
    let f16 = ElemType::Fp16;
    let base = fpc(f16, f16, 4, 1, 1);
    let g = ones(f16, 2, 8, 1);
    for (f, want) in [(0, 20), (1, 28), (2, 38)] {
        let o = run(&stages(&base, f), &g);
        assert_eq!(o.c, vec![vec![0x4100_0000]; 2], "fp_stages {f}");
        assert_eq!((o.cycles, o.useful_macs, o.gated_products), (want, 16, 0), "fp_stages {f}");
    }
    // i8, the same shape (no driver's rule: t1v0 held from 6, the weights
    // at 9..=12, issues 13): 20, as fp16 at H = 1, where the weights bind.
    assert_eq!(run(&ws(4, 1), &ones(ElemType::I8, 2, 8, 1)).cycles, 20);
}

#[test]
fn fp_ws_fp_stages_change_only_cycles() {
    // Random floating-point WS GEMMs (zeros of both signs, C0 or none, every
    // skipping knob): C, the counters and the program do not depend on
    // fp_stages, and C is still the spec's definition; only the cycles do,
    // and they grow with H: every issue is no earlier and the last row comes
    // R + 1 + ceil(log2 lanes) more cycles after the last issue per step of
    // fp_stages (R·H and D = pipeline + fp_stages + ceil(log2 lanes)·H), so
    // cycles(f + 1) >= cycles(f) + R + 1 + ceil(log2 lanes) (0 with no tile).
    let mut rng = Rng::new(0xf9_57a6e5);
    let types = [ElemType::Bf16, ElemType::Fp16, ElemType::Fp8e4m3, ElemType::Fp8e5m2];
    for case in 0..80 {
        let (t, u) = (*rng.pick(&types), *rng.pick(&types));
        let (rows, cols) = (1 + rng.below(4) as u32, 1 + rng.below(3) as u32);
        let lanes = [1u32, 2, 3, 4][rng.below(4) as usize];
        let (m, k, n) = (1 + rng.below(5) as usize, 1 + rng.below(12) as usize, 1 + rng.below(6) as usize);
        let mat = |rng: &mut Rng, r: usize, c: usize, ty: ElemType| -> Vec<Vec<i64>> {
            (0..r)
                .map(|_| (0..c).map(|_| if rng.chance(30) { (rng.below(2) as i64) << (ty.bits() - 1) } else { rand_elem(rng, ty, false) }).collect())
                .collect()
        };
        let a = mat(&mut rng, m, k, t);
        let b = mat(&mut rng, k, n, u);
        let c0 = rng.chance(50).then(|| (0..m).map(|_| (0..n).map(|_| [0, 0x8000_0000, 0x3F80_0000, 0xC000_0000][rng.below(4) as usize]).collect()).collect());
        let g = Gemm { a, b, c0 };
        let bits = rng.below(8) as u32;
        let c = SystolicParams {
            load_filter: bits & 1 != 0,
            rowcol_skip: bits & 2 != 0,
            gating: bits & 4 != 0,
            pipeline: rng.below(4) as u32,
            ..fpc(t, u, rows, cols, lanes)
        };
        let want = host_c(&c, &g);
        let o0 = run(&stages(&c, 0), &g);
        assert_eq!(o0.c, want, "case {case}");
        let mut prev = o0.clone();
        for f in 1..=5 {
            let cf = stages(&c, f);
            let o = run(&cf, &g);
            assert_eq!(o.c, want, "case {case} fp_stages {f}");
            assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (o0.useful_macs, o0.gated_products, o0.skipped_ksteps), "case {case} fp_stages {f}");
            assert_eq!(ws_program(&cf, &g), ws_program(&c, &g), "case {case} fp_stages {f}");
            let step = if prev.cycles == 0 { 0 } else { (rows + 1 + (lanes as f64).log2().ceil() as u32) as u64 };
            assert!(o.cycles >= prev.cycles + step, "case {case} fp_stages {f}: {} then {}", prev.cycles, o.cycles);
            prev = o;
        }
    }
}

#[test]
fn fp_parse_input() {
    let h = fpc(ElemType::Fp16, ElemType::Fp16, 2, 2, 1);
    let e4 = fpc(ElemType::Fp8e4m3, ElemType::Bf16, 2, 2, 1);
    let i8c = cfg(2, 2);
    // Numbers, rounded to the type; -0 and tiny negatives keep the sign;
    // c0 numbers to binary32.
    let g = parse_input(&json!({"a": [[1.0, -0.0, 65519.99, -1e-10]], "b": [[2], [0.5], [1], [3]], "c0": [[-0.0]]}), &h).unwrap();
    assert_eq!(g.a, vec![vec![0x3C00, 0x8000, 0x7BFF, 0x8000]]);
    assert_eq!(g.b, vec![vec![0x4000], vec![0x3800], vec![0x3C00], vec![0x4200]]);
    assert_eq!(g.c0, Some(vec![vec![0x8000_0000]]));
    // Bit patterns; E4M3's 464 rounds to 448 (0x7E).
    let g = parse_input(
        &json!({"a_bits": [[127, 255]], "b": [[1e38, 1], [-3.5, 2]], "c0_bits": [[4294967295u64, 2143289344]], "a_type": "fp8e4m3", "b_type": "bf16"}),
        &SystolicParams { rows: 1, ..e4.clone() },
    );
    let g = g.unwrap();
    assert_eq!((g.a.clone(), g.c0.clone()), (vec![vec![0x7F, 0xFF]], Some(vec![vec![0xFFFF_FFFF, 0x7FC0_0000]])));
    assert_eq!(g.b[1], vec![0xC060, 0x4000]);
    let g = parse_input(&json!({"a": [[464, -464]], "b_bits": [[0], [65535]]}), &e4).unwrap();
    assert_eq!((g.a, g.b), (vec![vec![0x7E, 0xFE]], vec![vec![0], vec![0xFFFF]]));

    let cases: Vec<(Value, &SystolicParams, &str)> = vec![
        (
            json!({"a": [[1, 65520]], "b": [[1], [2]]}),
            &h,
            "input `a[0][1]` = 65520: must be a number that rounds to a finite fp16 value (magnitude below 65520; the largest finite fp16 is 65504); NaN and Inf only as bit patterns, in `a_bits`",
        ),
        (
            json!({"a": [[464.0001]], "b_bits": [[0]]}),
            &e4,
            "input `a[0][0]` = 464.0001: must be a number that rounds to a finite fp8e4m3 value (magnitude at most 464; the largest finite fp8e4m3 is 448); NaN and Inf only as bit patterns, in `a_bits`",
        ),
        (
            json!({"a": [[1]], "b": [[-3.4e38]]}),
            &e4,
            "input `b[0][0]` = -3.4e+38: must be a number that rounds to a finite bf16 value (magnitude below 2^128 - 2^119, about 3.3962e38; the largest finite bf16 is about 3.3895e38); NaN and Inf only as bit patterns, in `b_bits`",
        ),
        (
            json!({"a": [[1]], "b": [["nan"]]}),
            &h,
            "input `b[0][0]` = \"nan\": must be a number that rounds to a finite fp16 value (magnitude below 65520; the largest finite fp16 is 65504); NaN and Inf only as bit patterns, in `b_bits`",
        ),
        (
            json!({"a": [[1]], "b": [[1]], "c0": [[3.5e38]]}),
            &h,
            "input `c0[0][0]` = 3.5e+38: must be a number that rounds to a finite binary32 value (magnitude below 2^128 - 2^103, about 3.4028236e38; the largest finite binary32 is about 3.4028235e38); NaN and Inf only as bit patterns, in `c0_bits`",
        ),
        (
            json!({"a_bits": [[65536]], "b": [[1]]}),
            &h,
            "input `a_bits[0][0]` = 65536: must be an integer from 0 to 65535 (a bit pattern of fp16)",
        ),
        (json!({"a_bits": [[-1]], "b": [[1]]}), &h, "input `a_bits[0][0]` = -1: must be an integer from 0 to 65535 (a bit pattern of fp16)"),
        (json!({"a_bits": [[1.0]], "b": [[1]]}), &h, "input `a_bits[0][0]` = 1.0: must be an integer from 0 to 65535 (a bit pattern of fp16)"),
        (
            json!({"a": [[1]], "b": [[1]], "c0_bits": [[4294967296u64]]}),
            &h,
            "input `c0_bits[0][0]` = 4294967296: must be an integer from 0 to 4294967295 (a bit pattern of binary32)",
        ),
        (
            json!({"a": [[1]], "a_bits": [[1]], "b": [[1]]}),
            &h,
            "input `a_bits` = (given): must be absent when `a` is given: A is given as numbers (`a`) or as bit patterns (`a_bits`), not both",
        ),
        (
            json!({"a": [[1]], "b": [[1]], "b_bits": [[1]]}),
            &h,
            "input `b_bits` = (given): must be absent when `b` is given: B is given as numbers (`b`) or as bit patterns (`b_bits`), not both",
        ),
        (
            json!({"a": [[1]], "b": [[1]], "c0": [[1]], "c0_bits": [[1]]}),
            &h,
            "input `c0_bits` = (given): must be absent when `c0` is given: C0 is given as numbers (`c0`) or as bit patterns (`c0_bits`), not both",
        ),
        (json!({"b": [[1]]}), &h, "input `a` = (missing): must be a list of lists of numbers, or `a_bits`: a list of lists of bit patterns"),
        (json!({"a": [[1]], "b": 1}), &h, "input `b` = 1: must be a list of lists of numbers"),
        (json!({"a": [[1]], "b_bits": [1]}), &h, "input `b_bits[0]` = 1: must be a list of integers"),
        (json!({"a": [[1, 2]], "b_bits": [[1]]}), &h, "input `b_bits` = a list of 1 rows: must be a list of 2 rows (the columns of a)"),
        (
            json!({"a": [[1]], "b": [[1]], "d_bits": 1}),
            &h,
            "input `d_bits` = (given): must be absent: keys are a or a_bits, b or b_bits, c0 or c0_bits, a_type, b_type",
        ),
        (json!({"a": [[1]], "b": [[1]], "a_type": "bf16"}), &h, "input `a_type` = \"bf16\": must be \"fp16\" (the block's a_type parameter)"),
        // Integer types take no bit patterns.
        (
            json!({"a_bits": [[1]], "a": [[1]], "b": [[1]]}),
            &i8c,
            "input `a_bits` = (given): must be absent: bit patterns are for floating-point types; integer types (i8 x i8) take `a`",
        ),
        (
            json!({"a": [[1]], "b": [[1]], "c0_bits": [[1]]}),
            &i8c,
            "input `c0_bits` = (given): must be absent: bit patterns are for floating-point types; integer types (i8 x i8) take `c0`",
        ),
        (json!({"a": [[1.5]], "b": [[1]]}), &i8c, "input `a[0][0]` = 1.5: must be an integer from -128 to 127 (i8)"),
    ];
    for (v, c, want) in cases {
        assert_eq!(perr(v.clone(), c), want, "{v}");
    }
    // Every violation is reported: both values of a row, then b.
    let e = parse_input(&json!({"a": [[1e6, -1e6]], "b_bits": [[70000], [1]]}), &h).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|x| x.field.as_str()).collect();
    assert_eq!(fields, ["a[0][0]", "a[0][1]", "b_bits[0][0]"]);
}

#[test]
fn fp_output_json() {
    let c = fpc(ElemType::Bf16, ElemType::Bf16, 1, 1, 1);
    let o = Outcome {
        c: vec![vec![NAN as i64, INF as i64, 0xFF80_0000, 0x3F80_0000], vec![0x0000_0001, 0xC020_0000, 0, 0x3DCC_CCCD]],
        cycles: 10,
        useful_macs: 3,
        gated_products: 1,
        skipped_ksteps: 0,
    };
    let v = output_json(&c, &o);
    assert_eq!(
        v,
        json!({
            "c": [["nan", "inf", "-inf", 1.0], [1.401298464324817e-45, -2.5, 0.0, 0.10000000149011612]],
            "c_bits": [[2143289344u64, 2139095040u64, 4286578688u64, 1065353216u64], [1, 3223322624u64, 0, 1036831949u64]],
            "cycles": 10, "useful_macs": 3, "gated_products": 1, "skipped_ksteps": 0, "utilization": 0.3,
        })
    );
    // Written out, the numbers read back as the same binary32 values.
    let text = serde_json::to_string(&v["c"][1]).unwrap();
    let back: Vec<f64> = serde_json::from_str(&text).unwrap();
    let bits: Vec<i64> = back.iter().map(|&x| fp::f32_from_f64(x).unwrap() as i64).collect();
    assert_eq!(bits, o.c[1]);
    // Without counters: c and c_bits and the cycles only.
    let v = output_json(&SystolicParams { stats: false, ..c }, &o);
    let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["c", "c_bits", "cycles"]);
}

// ---- floating point, output-stationary (dataflow = os) ----
//
// Without `c0_add` (`fpo`) each accumulator starts a tile at +0 and a C0 is
// an input error; with it (`fpo_c0`) at start(C0) = C0 ⊕ +0, C0 being where
// the sum begins, and the timing is the same.
//
// Hand-worked cycles follow "The grid, cycle by cycle" with P replaced by
// D = pipeline + ceil(log2 lanes) ("The output-stationary floating-point
// grid", "Timing"): the loader's cycle 0 is its first accept (the unit's
// is one earlier: `1 + ...`); row r of a tile ending at s is ready at
// s + r + C + 1 + D and transferred at the later of (ready + 1) and (the
// previous row's transfer + 1); a tile-ending step waits while an earlier
// tile is in flight (from the cycle after its ending step to the cycle
// before its last row's transfer).

/// A floating-point OS grid: R x C, `lanes` lanes, `pipeline`, no C0 add;
/// each lane slot as wide as the wider type.
fn fpo(t: ElemType, u: ElemType, rows: u32, cols: u32, lanes: u32, pipeline: u32) -> SystolicParams {
    let slot = t.bits().max(u.bits());
    SystolicParams {
        a_type: t,
        b_type: u,
        lanes,
        channel_bits: slot * lanes,
        acc_bits: 32,
        pipeline,
        c0_add: false,
        ..cfg(rows, cols)
    }
}

/// `c` with the C0 of "The output-stationary floating-point grid" (`c0_add`).
fn fpo_c0(c: &SystolicParams) -> SystolicParams {
    SystolicParams { c0_add: true, ..c.clone() }
}

/// The i8 grid of the same shape, lanes, parameters and `pipeline`.
fn int_of(c: &SystolicParams, pipeline: u32) -> SystolicParams {
    SystolicParams { a_type: ElemType::I8, b_type: ElemType::I8, channel_bits: 8 * c.lanes, pipeline, ..c.clone() }
}

/// The integer GEMM with the same zeros: 0 where the element is zero (+0
/// or -0), 1 elsewhere.
fn zero_pattern(c: &SystolicParams, g: &Gemm) -> Gemm {
    let f = |m: &Vec<Vec<i64>>, t: ElemType| m.iter().map(|r| r.iter().map(|&x| !t.is_zero(x) as i64).collect()).collect();
    Gemm { a: f(&g.a, c.a_type), b: f(&g.b, c.b_type), c0: None }
}

/// (cycles, useful, gated, skipped) of an outcome.
fn counts(o: &Outcome) -> (u64, u64, u64, u64) {
    (o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps)
}

#[test]
fn fp_os_timing_by_hand() {
    use ElemType::{Fp16, Fp8e4m3};
    let dense = |t: ElemType, m: usize, k: usize, n: usize| {
        let one = FpType::of(t).unwrap().from_f64(1.0).unwrap() as i64;
        Gemm { a: vec![vec![one; k]; m], b: vec![vec![one; n]; k], c0: None }
    };
    let check = |c: &SystolicParams, g: &Gemm, want: (u64, u64, u64, u64), int_want: (u64, u64, u64, u64), c_want: i64| {
        c.validate().unwrap();
        let o = run(c, g);
        assert_eq!(counts(&o), want, "{c:?}");
        assert_eq!(o.c, vec![vec![c_want; g.b[0].len()]; g.a.len()]);
        let i = int_of(c, c.pipeline);
        i.validate().unwrap();
        assert_eq!(counts(&run(&i, &zero_pattern(c, g))), int_want, "{i:?}");
    };
    // 1x1, lanes 1, pipeline 0: D = 0 = P. fp16 K = 3: issues at 1, 2, 3
    // (ending); row 0 ready at 3+0+1+1+0 = 5, out at 6: 1 + 6 cycles, as
    // the integer grid (cycles_single_pe_one_tile). C = 3.0.
    let c = fpo(Fp16, Fp16, 1, 1, 1, 0);
    assert_eq!(c.depth(), 0);
    check(&c, &dense(Fp16, 1, 3, 1), (1 + 6, 3, 0, 0), (1 + 6, 3, 0, 0), 0x4040_0000);
    // 1x1, lanes 4, pipeline 0: D = 0 + 2 = 2. fp8e4m3 K = 8, two steps:
    // issues at 1, 2 (ending); ready at 2+0+1+1+2 = 6, out at 7: 1 + 7.
    // i8 (D = 0): ready at 4, out at 5: 1 + 5; the extra depth shows once.
    // C = 8.0.
    let c = fpo(Fp8e4m3, Fp8e4m3, 1, 1, 4, 0);
    assert_eq!(c.depth(), 2);
    check(&c, &dense(Fp8e4m3, 1, 8, 1), (1 + 7, 8, 0, 0), (1 + 5, 8, 0, 0), 0x4100_0000);
    // 1x1, lanes 3, pipeline 1: D = 1 + ceil(log2 3) = 3. K = 3, one
    // step: issues at 1 (ending); ready at 1+0+1+1+3 = 6, out at 7: 1 + 7.
    // i8 (D = 1): ready at 4, out at 5: 1 + 5. C = 3.0.
    let c = fpo(Fp8e4m3, Fp8e4m3, 1, 1, 3, 1);
    assert_eq!(c.depth(), 3);
    check(&c, &dense(Fp8e4m3, 1, 3, 1), (1 + 7, 3, 0, 0), (1 + 5, 3, 0, 0), 0x4040_0000);
    // 2x2, lanes 1, pipeline 2: D = 2 = P. fp16 M = K = N = 2, one tile:
    // issues at 1, 2 (ending); rows ready at 2+0+2+1+2 = 7 and 8, out at 8
    // and 9: 1 + 9, as the integer grid. C = 2.0.
    let c = fpo(Fp16, Fp16, 2, 2, 1, 2);
    assert_eq!(c.depth(), 2);
    check(&c, &dense(Fp16, 2, 2, 2), (1 + 9, 8, 0, 0), (1 + 9, 8, 0, 0), 0x4000_0000);
    // 2x2, lanes 4, pipeline 2: D = 4. fp16 M = 2, K = 4, N = 4: two tiles
    // (column blocks) of one step each, one group each.
    //  0: accept tile 0's group.  1: its step issues (ending, s = 1);
    //  nothing remains: accept tile 1's group. Rows ready at 1+0+2+1+4 = 8
    //  and 9, out at 9 and 10: tile 0 in flight 2..=9.
    //  2..9: tile 1's step (ending) waits.  10: it issues; rows ready at
    //  10+3+4 = 17 and 18, out at 18, 19: 1 + 19.
    // i8 (D = 2): tile 0's rows out at 7, 8 (in flight 2..=7); tile 1
    // issues at 8, rows out at 14, 15: 1 + 15. The extra depth (2) shows
    // twice: tile 1 waits for tile 0's deeper drain, then drains deeper.
    // C = 4.0.
    let c = fpo(Fp16, Fp16, 2, 2, 4, 2);
    assert_eq!(c.depth(), 4);
    check(&c, &dense(Fp16, 2, 4, 4), (1 + 19, 32, 0, 0), (1 + 15, 32, 0, 0), 0x4080_0000);
    // 1x1, lanes 4, pipeline 0 (D = 2), M = 2, K = 20 (5 steps, one group
    // per tile): tile 0 issues at 1..5 (ending at 5) and its group is done
    // at 5: tile 1's group accepted at 5. Tile 0's row ready at
    // 5+0+1+1+2 = 9, out at 10: in flight 6..=9. Tile 1 issues at 6..9 and
    // its ending step at 10, after the window: no wait. Ready at 14, out at
    // 15: 1 + 15. i8 (D = 0): tile 0 out at 8, tile 1 ends at 10, out at
    // 13: 1 + 13. The depth is hidden behind tile 1's steps but the last
    // tile's: it shows once. C = 20.0.
    let c = fpo(Fp8e4m3, Fp8e4m3, 1, 1, 4, 0);
    check(&c, &dense(Fp8e4m3, 2, 20, 1), (1 + 15, 40, 0, 0), (1 + 13, 40, 0, 0), 0x41A0_0000);
}

#[test]
fn fp_os_zeros_by_hand() {
    use ElemType::Fp16;
    // 1x1, lanes 1, pipeline 2 (D = 2), fp16. A = (1, -0, 2, +0), B = (3,
    // 4, 5, 6): steps 1 and 3 have a zero A slice (-0 and +0 alike).
    // C = 1*3 + 2*5 = 13 = 0x41500000 with every parameter.
    let g = Gemm { a: vec![vec![0x3C00, 0x8000, 0x4000, 0x0000]], b: vec![vec![0x4200], vec![0x4400], vec![0x4500], vec![0x4600]], c0: None };
    let on = fpo(Fp16, Fp16, 1, 1, 1, 2);
    on.validate().unwrap();
    // Load filter: steps 0, 2 issue at 1, 2 (ending); ready at
    // 2+0+1+1+2 = 6, out at 7: 1 + 7; 2 skipped.
    let o = run(&on, &g);
    assert_eq!(o.c, vec![vec![0x4150_0000]]);
    assert_eq!(counts(&o), (1 + 7, 2, 0, 2));
    // No load filter: steps 0..3 issue at 1..4; ready at 8, out at 9:
    // 1 + 9; the two zero steps are gated (1 product each), or not counted
    // without gating.
    let off = SystolicParams { load_filter: false, ..on.clone() };
    let o = run(&off, &g);
    assert_eq!(o.c, vec![vec![0x4150_0000]]);
    assert_eq!(counts(&o), (1 + 9, 2, 2, 0));
    let o = run(&SystolicParams { gating: false, ..off.clone() }, &g);
    assert_eq!((o.c.clone(), counts(&o)), (vec![vec![0x4150_0000]], (1 + 9, 2, 0, 0)));
    // The integer grid with the same zeros and pipeline gives the same.
    for c in [&on, &off] {
        assert_eq!(counts(&run(&int_of(c, 2), &zero_pattern(c, &g))), counts(&run(c, &g)));
    }
    // The null step: 1x1, lanes 2 (D = 0 + 1 = 1), no row/column skip, an
    // A row of -0 and +0: the tile's one step is not useful, so the last
    // group issues the null step at 1 (ending); ready at 1+0+1+1+1 = 4,
    // out at 5: 1 + 5 (i8: 1 + 4). It counts nothing; the step is
    // skipped. C = +0.
    let c = SystolicParams { rowcol_skip: false, ..fpo(Fp16, Fp16, 1, 1, 2, 0) };
    c.validate().unwrap();
    let g = Gemm { a: vec![vec![0x8000, 0x0000]], b: vec![vec![0x3C00], vec![0x8000]], c0: None };
    let o = run(&c, &g);
    assert_eq!((o.c.clone(), counts(&o)), (vec![vec![0]], (1 + 5, 0, 0, 1)));
    assert_eq!(counts(&run(&int_of(&c, 0), &zero_pattern(&c, &g))), (1 + 4, 0, 0, 1));
    // With row/column skip the row of zeros is dropped: no tile at all,
    // 0 cycles, C = +0 (start without C0).
    let o = run(&SystolicParams { rowcol_skip: true, ..c }, &g);
    assert_eq!((o.c.clone(), counts(&o)), (vec![vec![0]], (0, 0, 0, 0)));
    // Padding and zero lanes are gated: 2x2 grid, lanes 2, on a 1 x 3 x 1
    // GEMM (-0 in A's lane 1 of step 0; step 1's lane 1 is padding):
    // step 0: 1 useful pair, 2*2*2 - 1 = 7 gated; step 1: 1 useful, 7
    // gated. C = 1*1 + (-0)*Inf + 2*1 = 3.0 (the zero times Inf is +0).
    let c = fpo(Fp16, Fp16, 2, 2, 2, 0);
    let g = Gemm { a: vec![vec![0x3C00, 0x8000, 0x4000]], b: vec![vec![0x3C00], vec![0x7C00], vec![0x3C00]], c0: None };
    let o = run(&c, &g);
    assert_eq!(o.c, vec![vec![0x4040_0000]]);
    assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (2, 14, 0));
}

/// C played through the OS program as the floating-point grid computes it
/// ("The output-stationary floating-point grid", "Arithmetic"): each PE's
/// accumulator starts a tile at start(C0) of its place (+0 without C0, and
/// at padding places); each issued step (with `load_filter` the useful
/// ones: A slice and B slice both with a non-zero element, -0 being zero;
/// without, every present step) adds its lane tree, a gated lane's product
/// being +0 without a multiply, and a step whose lanes are all gated
/// leaving the accumulator as it is; a group with nothing useful adds
/// nothing (the null step). Elements no tile covers are start(C0).
fn os_replay_fp(cfg: &SystolicParams, g: &Gemm, tiles: &[Tile]) -> Vec<Vec<i64>> {
    let (ta, tb) = (FpType::of(cfg.a_type).unwrap(), FpType::of(cfg.b_type).unwrap());
    let (m, n) = (g.a.len(), g.b[0].len());
    let start = |r: usize, cc: usize| fp::start(g.c0.as_ref().map_or(0, |c0| c0[r][cc] as u32));
    let mut c: Vec<Vec<i64>> = (0..m).map(|r| (0..n).map(|cc| start(r, cc) as i64).collect()).collect();
    for t in tiles {
        let mut acc: Vec<Vec<u32>> = t
            .rows
            .iter()
            .map(|row| t.cols.iter().map(|col| if let (Some(r), Some(cc)) = (row, col) { start(*r, *cc) } else { 0 }).collect())
            .collect();
        for grp in &t.groups {
            for st in grp.steps() {
                let nz = |v: &Vec<Vec<i64>>, ty: FpType| v.iter().flatten().any(|&x| !ty.is_zero(x as u32));
                if cfg.load_filter && !(nz(&st.a, ta) && nz(&st.b, tb)) {
                    continue;
                }
                for (i, a) in st.a.iter().enumerate() {
                    for (j, b) in st.b.iter().enumerate() {
                        let gated: Vec<bool> = a.iter().zip(b).map(|(&x, &y)| ta.is_zero(x as u32) || tb.is_zero(y as u32)).collect();
                        if cfg.gating && gated.iter().all(|&z| z) {
                            continue;
                        }
                        let p: Vec<u32> = (0..a.len())
                            .map(|l| if cfg.gating && gated[l] { 0 } else { fp::mul(ta, a[l] as u32, tb, b[l] as u32) })
                            .collect();
                        acc[i][j] = fp::add(acc[i][j], fp::tree(&p));
                    }
                }
            }
        }
        for (i, row) in t.rows.iter().enumerate() {
            for (j, col) in t.cols.iter().enumerate() {
                if let (Some(r), Some(cc)) = (row, col) {
                    c[*r][*cc] = acc[i][j] as i64;
                }
            }
        }
    }
    c
}

/// A random small OS floating-point grid: (A type, B type, rows, cols,
/// lanes, group), drawn in that order.
fn random_os_fp_shape(rng: &mut Rng) -> (ElemType, ElemType, u32, u32, u32, u32) {
    let types = [ElemType::Bf16, ElemType::Fp16, ElemType::Fp8e4m3, ElemType::Fp8e5m2];
    let (t, u) = (*rng.pick(&types), *rng.pick(&types));
    let (rows, cols) = (1 + rng.below(3) as u32, 1 + rng.below(3) as u32);
    let lanes = [1u32, 2, 3, 4][rng.below(4) as usize];
    let group = 1 + rng.below(3) as u32;
    (t, u, rows, cols, lanes, group)
}

#[test]
fn fp_os_zero_skipping_is_exact() {
    // Block-sparse random matrices with zeros of both signs on OS grids:
    // C is the host definition and the program's replay with every
    // skipping parameter on or off; the counters and cycles are the
    // integer grid's with the same zeros at pipeline D, do not depend on the
    // zeros' signs, and useful is the direct count of non-zero products.
    let mut rng = Rng::new(0x05f9);
    for case in 0..50 {
        let (t, u, rows, cols, lanes, group) = random_os_fp_shape(&mut rng);
        let (m, k, n) = (1 + rng.below(6) as usize, 1 + rng.below(10) as usize, 1 + rng.below(6) as usize);
        let specials = rng.chance(30);
        let sparse = |rng: &mut Rng, r: usize, c: usize, ty: ElemType| -> Vec<Vec<i64>> {
            let dead: Vec<Vec<bool>> = (0..r.div_ceil(2)).map(|_| (0..c.div_ceil(2)).map(|_| rng.chance(50)).collect()).collect();
            (0..r)
                .map(|i| {
                    (0..c)
                        .map(|j| {
                            if dead[i / 2][j / 2] || rng.chance(10) {
                                (rng.below(2) as i64) << (ty.bits() - 1)
                            } else {
                                rand_elem(rng, ty, specials)
                            }
                        })
                        .collect()
                })
                .collect()
        };
        let g = Gemm { a: sparse(&mut rng, m, k, t), b: sparse(&mut rng, k, n, u), c0: None };
        let resign = |g: &Gemm, neg: bool| {
            let f = |mat: &Vec<Vec<i64>>, ty: ElemType| -> Vec<Vec<i64>> {
                mat.iter().map(|r| r.iter().map(|&x| if ty.is_zero(x) { (neg as i64) << (ty.bits() - 1) } else { x }).collect()).collect()
            };
            Gemm { a: f(&g.a, t), b: f(&g.b, u), c0: None }
        };
        let nz: u64 = (0..m)
            .flat_map(|i| (0..k).flat_map(move |kk| (0..n).map(move |j| (i, kk, j))))
            .filter(|&(i, kk, j)| !t.is_zero(g.a[i][kk]) && !u.is_zero(g.b[kk][j]))
            .count() as u64;
        let pipeline = rng.below(4) as u32;
        let want = host_c(&fpo(t, u, rows, cols, lanes, pipeline), &g);
        for bits in 0..8u32 {
            let c = SystolicParams {
                load_filter: bits & 1 != 0,
                rowcol_skip: bits & 2 != 0,
                gating: bits & 4 != 0,
                group,
                ..fpo(t, u, rows, cols, lanes, pipeline)
            };
            c.validate().unwrap();
            let o = run(&c, &g);
            assert_eq!(o.c, want, "case {case} params {bits}");
            let tiles = program(&c, &g);
            assert_eq!(os_replay_fp(&c, &g, &tiles), want, "case {case} params {bits}");
            assert_eq!(o.useful_macs, nz, "case {case} params {bits}");
            // The integer grid with the same zeros at pipeline D.
            let d = c.depth();
            assert_eq!(d, pipeline + [0, 1, 2, 2][lanes as usize - 1]);
            let i = int_of(&c, d);
            let zp = zero_pattern(&c, &g);
            assert_eq!(counts(&o), counts(&run(&i, &zp)), "case {case} params {bits}");
            assert_eq!(tiles.len(), program(&i, &zp).len());
            // At the fp grid's own pipeline the integer grid is no slower,
            // and the same when D = pipeline (lanes 1).
            let ip = run(&int_of(&c, pipeline), &zp);
            assert!(ip.cycles <= o.cycles);
            if lanes == 1 {
                assert_eq!(ip.cycles, o.cycles);
            }
            for neg in [false, true] {
                let h = resign(&g, neg);
                assert_eq!(run(&c, &h), o, "case {case} params {bits}: the zeros' signs");
                assert_eq!(program(&c, &h).len(), tiles.len());
            }
        }
    }
}

#[test]
fn fp_os_c0_is_an_error() {
    let c = fpo(ElemType::Fp16, ElemType::Fp16, 2, 2, 1, 2);
    c.validate().unwrap();
    // Built without the C0 add (c0_add = true is allowed: fp_os_c0_parse_input).
    assert!(!c.c0_add);
    let msg = "must be absent: the grid is built without the C0 add (parameter c0_add = false)";
    let all = |v: Value, p: &SystolicParams| -> Vec<String> { parse_input(&v, p).unwrap_err().0.iter().map(|x| x.to_string()).collect() };
    assert_eq!(all(json!({"a": [[1]], "b": [[1]], "c0": [[1]]}), &c), [format!("input `c0` = (given): {msg}")]);
    assert_eq!(all(json!({"a": [[1]], "b": [[1]], "c0_bits": [[0]]}), &c), [format!("input `c0_bits` = (given): {msg}")]);
    // Both given: each is reported (neither may be present).
    assert_eq!(
        all(json!({"a": [[1]], "b": [[1]], "c0": [[1]], "c0_bits": [[0]]}), &c),
        [format!("input `c0` = (given): {msg}"), format!("input `c0_bits` = (given): {msg}")]
    );
    // Even a bad C0 is only refused, not read; the other matrices still are.
    assert_eq!(
        all(json!({"a": [[70000]], "b": [[1]], "c0": "x"}), &c),
        [
            "input `a[0][0]` = 70000: must be a number that rounds to a finite fp16 value (magnitude below 65520; the largest finite fp16 is 65504); NaN and Inf only as bit patterns, in `a_bits`".to_string(),
            format!("input `c0` = (given): {msg}")
        ]
    );
    // The integer grid without c0_add: the same message for `c0`;
    // `c0_bits` is refused once, as a pattern key for integer types.
    let i = SystolicParams { c0_add: false, ..cfg(2, 2) };
    assert_eq!(all(json!({"a": [[1]], "b": [[1]], "c0": [[1]]}), &i), [format!("input `c0` = (given): {msg}")]);
    assert_eq!(
        all(json!({"a": [[1]], "b": [[1]], "c0_bits": [[1]]}), &i),
        ["input `c0_bits` = (given): must be absent: bit patterns are for floating-point types; integer types (i8 x i8) take `c0`"]
    );
    // Without C0 the input is read (numbers or patterns), and runs from +0.
    let g = parse_input(&json!({"a": [[1.5, -0.0]], "b_bits": [[0x4000], [0x7C00]]}), &c).unwrap();
    assert_eq!(g, Gemm { a: vec![vec![0x3E00, 0x8000]], b: vec![vec![0x4000], vec![0x7C00]], c0: None });
    assert_eq!(run(&c, &g).c, vec![vec![0x4040_0000]]);
    // The WS floating-point grid keeps its C0.
    let w = fpc(ElemType::Fp16, ElemType::Fp16, 2, 2, 1);
    assert!(parse_input(&json!({"a": [[1]], "b": [[1]], "c0": [[1]]}), &w).is_ok());
}

// The spec's C with host f32 arithmetic, written out ("Accumulation"): each
// add an f32 add made canonical (-0 -> +0, NaN -> 0x7FC00000), the
// accumulator starting at start(C0) = C0 ⊕ +0 and adding each step's lane
// tree in order.
fn f32_add(x: f32, y: f32) -> f32 {
    host_canon(x + y)
}

/// ((start(c0) ⊕ t_0) ⊕ t_1) ⊕ ..., as a binary32 pattern.
fn f32_from_start(c0: u32, t: &[f32]) -> i64 {
    t.iter().fold(f32_add(f32::from_bits(c0), 0.0), |acc, &t| f32_add(acc, t)).to_bits() as i64
}

#[test]
fn fp_os_c0_starts_the_sum() {
    use ElemType::Fp16;
    // 2x2 grid, lanes 2, pipeline 2 (D = 2 + 1 = 3), fp16, with C0. M = 3,
    // K = 4 (two steps of two lanes), N = 2: two tiles (row blocks), one
    // group each. fp16: 1.0 = 0x3C00, 2.0 = 0x4000, 3.0 = 0x4200, 4.0 =
    // 0x4400, 0.5 = 0x3800, -1.0 = 0xBC00, -2.0 = 0xC000.
    let c = fpo_c0(&fpo(Fp16, Fp16, 2, 2, 2, 2));
    c.validate().unwrap();
    assert_eq!(c.depth(), 3);
    let a = vec![
        vec![0x3C00, 0x4000, 0x4200, 0x4400], // 1, 2, 3, 4
        vec![0x3C00, 0x4000, 0x3C00, 0x4000], // 1, 2, 1, 2
        vec![0x3C00, 0xBC00, 0x4000, 0xC000], // 1, -1, 2, -2
    ];
    // Column 0: 1, 0.5, -1, 2; column 1: all 1.
    let b = vec![vec![0x3C00, 0x3C00], vec![0x3800, 0x3C00], vec![0xBC00, 0x3C00], vec![0x4000, 0x3C00]];
    let c0 = vec![
        vec![0.1f32.to_bits() as i64, 0x7F80_0001], // an ordinary value; a signalling NaN with a payload
        vec![0x7F80_0000, 1.0e8f32.to_bits() as i64], // +Inf; 1e8 (an ulp of 8)
        vec![(-3.0f32).to_bits() as i64, 0x8000_0000], // -3; -0
    ];
    let g = Gemm { a, b, c0: Some(c0.clone()) };
    // Each step's lane tree, p0 ⊕ p1 (the products are exact).
    let t = |p: [f32; 4]| [f32_add(p[0], p[1]), f32_add(p[2], p[3])];
    let steps = [
        [t([1.0 * 1.0, 2.0 * 0.5, 3.0 * -1.0, 4.0 * 2.0]), t([1.0, 2.0, 3.0, 4.0])], // (2, 5), (3, 7)
        [t([1.0 * 1.0, 2.0 * 0.5, 1.0 * -1.0, 2.0 * 2.0]), t([1.0, 2.0, 1.0, 2.0])], // (2, 3), (3, 3)
        [t([1.0 * 1.0, -1.0 * 0.5, 2.0 * -1.0, -2.0 * 2.0]), t([1.0, -1.0, 2.0, -2.0])], // (0.5, -6), (+0, +0)
    ];
    let want: Vec<Vec<i64>> = (0..3).map(|i| (0..2).map(|j| f32_from_start(c0[i][j] as u32, &steps[i][j])).collect()).collect();
    // By hand: 0.1 + 2 + 5 in f32; the NaN C0 starts at 0x7FC00000 and
    // stays; Inf + 2 + 3 = Inf; 1e8 + 3 + 3 = 1e8 (each 3 is below half an
    // ulp); -3 + 0.5 - 6 = -8.5; -0 starts at +0, and +0 + (+0) + (+0) = +0.
    assert_eq!(want[0][0], f32_add(f32_add(0.1, 2.0), 5.0).to_bits() as i64);
    assert_eq!(want[0][1], 0x7FC0_0000);
    assert_eq!(want[1][0], 0x7F80_0000);
    assert_eq!(want[1][1], 0x4CBE_BC20);
    assert_eq!(want[2][0], (-8.5f32).to_bits() as i64);
    assert_eq!(want[2][1], 0);
    let o = run(&c, &g);
    assert_eq!(o.c, want);
    assert_eq!(o.c, host_c(&c, &g));
    assert_eq!(os_replay_fp(&c, &g, &program(&c, &g)), want);
    // C0 is where the sum begins: C0 added last (the steps summed from +0,
    // then C0, as an add at the output would) gives other binary32 results.
    let last = |i: usize, j: usize| f32_add(f32_add(f32_add(0.0, steps[i][j][0]), steps[i][j][1]), f32::from_bits(c0[i][j] as u32)).to_bits() as i64;
    assert_eq!(last(1, 1), 0x4CBE_BC21); // 1e8 + 6 rounds up to 1e8 + 8
    assert_ne!(o.c[1][1], last(1, 1));
    // (Here the other elements agree either way: 0.1 + 2 + 5 = (2 + 5) + 0.1
    // in binary32.)
    assert_eq!(o.c[0][0], last(0, 0));
    let g_none = Gemm { c0: None, ..g.clone() };
    // The timing does not depend on C0: tile 0's steps issue at 1, 2
    // (ending, s = 2); tile 1's group is accepted at 2. Rows ready at
    // 2+0+2+1+3 = 8, 9, out at 9, 10: in flight 3..=9. Tile 1's step 0
    // issues at 3, its ending step waits to 10; rows ready at 16, 17, out
    // at 17, 18: 1 + 18. Useful: tile 0 4 pairs a lane a step (16); tile 1
    // one A row, 2 pairs a lane a step (8), 4 gated a step (8).
    assert_eq!(counts(&o), (1 + 18, 24, 8, 0));
    assert_eq!(counts(&run(&c, &g_none)), counts(&o));
    assert_eq!(counts(&run(&fpo(Fp16, Fp16, 2, 2, 2, 2), &g_none)), counts(&o));

    // 1x1, lanes 1: -Inf + Inf is NaN; a NaN C0 of the other sign with a
    // payload starts at 0x7FC00000; +Inf stays. fp16 +Inf = 0x7C00.
    let c = fpo_c0(&fpo(Fp16, Fp16, 1, 1, 1, 0));
    c.validate().unwrap();
    let one = |x: i64| vec![vec![x]];
    let a = vec![vec![0x7C00, 0x3C00]];
    let b = vec![vec![0x3C00], vec![0x3C00]];
    for (c0, want) in [(0xFF80_0000u32, 0x7FC0_0000), (0xFFC1_2345, 0x7FC0_0000), (0x7F80_0000, 0x7F80_0000)] {
        let g = Gemm { a: a.clone(), b: b.clone(), c0: Some(one(c0 as i64)) };
        assert_eq!(f32_from_start(c0, &[f32::INFINITY, 1.0]), want);
        assert_eq!(run(&c, &g).c, one(want), "C0 {c0:#x}");
    }
    // The smallest subnormal C0 (2^-149) is kept as it starts, and lost
    // under a product of 1.0.
    let g = Gemm { a: one(0x3C00), b: one(0x3C00), c0: Some(one(1)) };
    assert_eq!(f32_from_start(1, &[]), 1);
    assert_eq!(f32_from_start(1, &[1.0]), 0x3F80_0000);
    assert_eq!(run(&c, &g).c, one(0x3F80_0000));
}

#[test]
fn fp_os_c0_rowcol_skip() {
    use ElemType::Fp16;
    // 2x2 grid, lanes 1, fp16, with C0; M = 3, K = 2, N = 3. A's row 1 is
    // all zero (-0 and +0), B's column 2 too: with rowcol_skip no tile
    // covers them, without it row 1 shares a tile with row 0 (its steps
    // add +0) and column 2's tiles issue only the null step with the load
    // filter. Either way they come out as start(C0).
    let a = vec![vec![0x3C00, 0x4000], vec![0x8000, 0x0000], vec![0x4200, 0xBC00]]; // (1, 2), (-0, +0), (3, -1)
    let b = vec![vec![0x3C00, 0x3800, 0x8000], vec![0x4000, 0x4400, 0x0000]]; // columns (1, 2), (0.5, 4), (-0, +0)
    let c0 = vec![
        vec![1.5f32.to_bits() as i64, 0x8000_0000, 0xFFC0_0001],
        vec![0x8000_0000, 0x7F80_0002, 0xFF80_0000],
        vec![0x0000_0001, 2.0f32.to_bits() as i64, 0.1f32.to_bits() as i64],
    ];
    let g = Gemm { a, b, c0: Some(c0.clone()) };
    let want = vec![
        vec![f32_from_start(c0[0][0] as u32, &[1.0, 4.0]), f32_from_start(c0[0][1] as u32, &[0.5, 8.0]), 0x7FC0_0000],
        vec![0, 0x7FC0_0000, 0xFF80_0000], // start(C0): -0 -> +0, NaN -> 0x7FC00000, -Inf
        vec![f32_from_start(c0[2][0] as u32, &[3.0, -2.0]), f32_from_start(c0[2][1] as u32, &[1.5, -4.0]), 0.1f32.to_bits() as i64],
    ];
    assert_eq!(want[0][..2], [6.5f32.to_bits() as i64, 8.5f32.to_bits() as i64]);
    assert_eq!(want[2][..2], [1.0f32.to_bits() as i64, (-0.5f32).to_bits() as i64]);
    let no_c0 = Gemm { c0: None, ..g.clone() };
    for bits in 0..8u32 {
        for pipeline in [0, 2] {
            let c = SystolicParams {
                load_filter: bits & 1 != 0,
                rowcol_skip: bits & 2 != 0,
                gating: bits & 4 != 0,
                ..fpo_c0(&fpo(Fp16, Fp16, 2, 2, 1, pipeline))
            };
            c.validate().unwrap();
            let o = run(&c, &g);
            assert_eq!(o.c, want, "params {bits}");
            assert_eq!(o.c, host_c(&c, &g), "params {bits}");
            let tiles = program(&c, &g);
            assert_eq!(os_replay_fp(&c, &g, &tiles), want, "params {bits}");
            if c.rowcol_skip {
                // Rows 0, 2 and columns 0, 1: one tile, which covers
                // neither row 1 nor column 2.
                assert_eq!(tiles.len(), 1);
                assert_eq!((tiles[0].rows.clone(), tiles[0].cols.clone()), (vec![Some(0), Some(2)], vec![Some(0), Some(1)]));
            } else {
                assert_eq!(tiles.len(), 4);
            }
            // Without C0 the same elements are +0, and the cycles and
            // counters are the same.
            let o0 = run(&c, &no_c0);
            assert_eq!((o0.c[1].clone(), o0.c[0][2], o0.c[2][2]), (vec![0, 0, 0], 0, 0));
            assert_eq!(counts(&o0), counts(&o), "params {bits}");
            assert_eq!(counts(&run(&SystolicParams { c0_add: false, ..c.clone() }, &no_c0)), counts(&o));
        }
    }
}

#[test]
fn fp_os_c0_parse_input() {
    let c = fpo_c0(&fpo(ElemType::Fp16, ElemType::Fp16, 2, 2, 1, 2));
    c.validate().unwrap();
    // Numbers rounded to binary32 (a tie to even; -0 and a tiny negative
    // keep the sign), or patterns as given (NaN payloads, -0, Inf).
    let g = parse_input(&json!({"a": [[1]], "b": [[1, 1, 1, 1, 1]], "c0": [[0.1, 1e8, 16777217, -0.0, -1e-50]]}), &c).unwrap();
    assert_eq!(g.c0, Some(vec![vec![0x3DCC_CCCD, 0x4CBE_BC20, 0x4B80_0000, 0x8000_0000, 0x8000_0000]]));
    let bits = vec![vec![0x7F80_0001i64, 0xFFFF_FFFF, 0x8000_0000, 0x7F80_0000, 0x0000_0001]];
    let g = parse_input(&json!({"a_bits": [[0x3C00]], "b": [[1, 1, 1, 1, 1]], "c0_bits": bits}), &c).unwrap();
    assert_eq!(g.c0, Some(bits.clone()));
    // And it runs from start(C0): 1·1 added to each.
    let want: Vec<i64> = bits[0].iter().map(|&x| f32_from_start(x as u32, &[1.0])).collect();
    assert_eq!(want[..4], [0x7FC0_0000, 0x7FC0_0000, 0x3F80_0000, 0x7F80_0000]);
    assert_eq!(run(&c, &g).c, vec![want]);
    // The C0 checks are the WS floating-point grid's.
    let w = fpc(ElemType::Fp16, ElemType::Fp16, 2, 2, 1);
    for v in [
        json!({"a": [[1]], "b": [[1]], "c0": [[3.5e38]]}),
        json!({"a": [[1]], "b": [[1]], "c0_bits": [[4294967296u64]]}),
        json!({"a": [[1]], "b": [[1]], "c0": [[1]], "c0_bits": [[1]]}),
        json!({"a": [[1]], "b": [[1]], "c0": [[1], [2]]}),
        json!({"a": [[1]], "b": [[1]], "c0": [["nan"]]}),
    ] {
        let got = perr(v.clone(), &c);
        assert_eq!(got, perr(v.clone(), &w), "{v}");
        assert!(!got.contains("c0_add"), "{v}: {got}");
    }
    assert_eq!(
        perr(json!({"a": [[1]], "b": [[1]], "c0": [[1], [2]]}), &c),
        "input `c0` = a list of 2 rows: must be a list of 1 rows (the rows of a)"
    );
    // Without c0_add the same inputs are refused (fp_os_c0_is_an_error).
    let off = SystolicParams { c0_add: false, ..c.clone() };
    off.validate().unwrap();
    let msg = "input `c0` = (given): must be absent: the grid is built without the C0 add (parameter c0_add = false)";
    assert_eq!(perr(json!({"a": [[1]], "b": [[1]], "c0": [[1]]}), &off), msg);
    assert_eq!(perr(json!({"a": [[1]], "b": [[1]], "c0_bits": [[1]]}), &off), msg.replace("`c0`", "`c0_bits`"));
    // With c0_add and no C0 the input is read and runs from +0.
    let g = parse_input(&json!({"a": [[1]], "b": [[2]]}), &c).unwrap();
    assert_eq!((g.c0.clone(), run(&c, &g).c), (None, vec![vec![0x4000_0000]]));
}

/// A random binary32 C0 pattern: specials (zeros of both signs, NaNs with
/// payloads, infinities, subnormals, large values whose ulp hides the
/// products) or a moderate value of either sign.
fn rand_c0(rng: &mut Rng) -> i64 {
    const SPECIAL: [u32; 10] =
        [0x8000_0000, 0x0000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0x7F80_0001, 0xFFC1_2345, 0x0000_0001, 0x8040_0000, 0x4CBE_BC20];
    if rng.chance(30) {
        return *rng.pick(&SPECIAL) as i64;
    }
    let sign = (rng.below(2) as u32) << 31;
    let exp = 120 + rng.below(40) as u32; // 2^-7 .. 2^32
    (sign | (exp << 23) | rng.below(1 << 23) as u32) as i64
}

#[test]
fn fp_os_c0_random() {
    // Random GEMMs with zeros (some whole rows and columns) and random C0
    // on OS grids with c0_add: C is the host definition from start(C0) and
    // the program's replay with every skipping parameter on or off; the
    // cycles and counters are those of the same run without C0, and of the
    // grid without c0_add.
    let mut rng = Rng::new(0xc0c0);
    for case in 0..40 {
        let (t, u, rows, cols, lanes, group) = random_os_fp_shape(&mut rng);
        let pipeline = rng.below(4) as u32;
        let (m, k, n) = (1 + rng.below(5) as usize, 1 + rng.below(8) as usize, 1 + rng.below(5) as usize);
        let specials = rng.chance(30);
        let zero = |rng: &mut Rng, ty: ElemType| (rng.below(2) as i64) << (ty.bits() - 1);
        let dead_row = rng.below(m as u64 + 1) as usize; // == m: none
        let dead_col = rng.below(n as u64 + 1) as usize;
        let a: Vec<Vec<i64>> = (0..m)
            .map(|i| (0..k).map(|_| if i == dead_row || rng.chance(20) { zero(&mut rng, t) } else { rand_elem(&mut rng, t, specials) }).collect())
            .collect();
        let b: Vec<Vec<i64>> = (0..k)
            .map(|_| (0..n).map(|j| if j == dead_col || rng.chance(20) { zero(&mut rng, u) } else { rand_elem(&mut rng, u, specials) }).collect())
            .collect();
        let c0: Vec<Vec<i64>> = (0..m).map(|_| (0..n).map(|_| rand_c0(&mut rng)).collect()).collect();
        let g = Gemm { a, b, c0: Some(c0) };
        let no_c0 = Gemm { c0: None, ..g.clone() };
        let base = fpo_c0(&fpo(t, u, rows, cols, lanes, pipeline));
        let want = host_c(&base, &g);
        for bits in 0..8u32 {
            let c = SystolicParams { load_filter: bits & 1 != 0, rowcol_skip: bits & 2 != 0, gating: bits & 4 != 0, group, ..base.clone() };
            c.validate().unwrap();
            let o = run(&c, &g);
            assert_eq!(o.c, want, "case {case} params {bits}");
            assert_eq!(os_replay_fp(&c, &g, &program(&c, &g)), want, "case {case} params {bits}");
            assert_eq!(counts(&run(&c, &no_c0)), counts(&o), "case {case} params {bits}");
            assert_eq!(counts(&run(&SystolicParams { c0_add: false, ..c.clone() }, &no_c0)), counts(&o), "case {case} params {bits}");
        }
    }
}
