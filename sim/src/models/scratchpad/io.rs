//! `gpurtl run scratchpad` files (docs/scratchpad.md "input" and "output"):
//! the input, checked with every violation reported; the output; and random
//! workloads for the testbench.

use super::{db, Outcome, Phase, Workload, Write};
use crate::models::{err, parse_hex, shown, InputError, InputErrors, Violations};
use crate::rng::Rng;
use gpurtl_params::scratchpad::ScratchpadParams;
use num_bigint::BigUint;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// `2^A`, the scratchpad's size in bytes.
fn space(p: &ScratchpadParams) -> u64 {
    1u64 << p.addr_bits()
}

/// All strobes of a word.
fn all_strobes(p: &ScratchpadParams) -> u32 {
    ((1u64 << db(p)) - 1) as u32
}

fn addr_allowed(p: &ScratchpadParams) -> String {
    format!("an integer multiple of {} from 0 to {}", db(p), space(p) - db(p))
}

/// A word address, or the violation.
fn word_addr(p: &ScratchpadParams, field: String, x: Option<&Value>) -> Result<u64, InputError> {
    match x {
        None => Err(err(field, "(missing)", addr_allowed(p))),
        Some(a) => match a.as_u64() {
            Some(n) if n < space(p) && n.is_multiple_of(db(p)) => Ok(n),
            _ => Err(err(field, shown(a), addr_allowed(p))),
        },
    }
}

/// Parse and check an input file (docs/scratchpad.md "`gpurtl run
/// scratchpad` input"). Every violation is reported, phase by phase: the
/// keys, `reads` and `writes` element by element, then the phase's rules
/// (a word written by two ports; a read of a word the phase writes, or of a
/// byte no earlier phase wrote).
pub fn parse_input(v: &Value, p: &ScratchpadParams) -> Result<Workload, InputErrors> {
    let (nr, nw) = (p.read_ports as usize, p.write_ports as usize);
    let dbu = db(p);
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with a `phases` list"))));
    };
    for k in obj.keys() {
        if k != "phases" {
            e.push(err(k.as_str(), "(given)", "absent: the only key is phases"));
        }
    }
    // spec: `phases` is required (the file has nothing else); a phase's
    // `reads` and `writes` are optional.
    let list = match obj.get("phases") {
        None => {
            e.push(err("phases", "(missing)", "a list of phases"));
            return Err(e.stop(None));
        }
        Some(l) => match l.as_array() {
            None => {
                e.push(err("phases", shown(l), "a list of phases"));
                return Err(e.stop(None));
            }
            Some(l) => l,
        },
    };

    // Bytes written by the earlier phases.
    let mut written: BTreeSet<u64> = BTreeSet::new();
    let mut phases = Vec::new();
    for (i, x) in list.iter().enumerate() {
        let at = format!("phases[{i}]");
        let Some(o) = x.as_object() else {
            e.push(err(&at, shown(x), "an object with optional `reads` and `writes` lists"));
            continue;
        };
        for k in o.keys() {
            if !["reads", "writes"].contains(&k.as_str()) {
                e.push(err(format!("{at}.{k}"), "(given)", "absent: keys are reads, writes"));
            }
        }

        // reads: per port, the good addresses with their index.
        let mut reads: Vec<Vec<(usize, u64)>> = vec![Vec::new(); nr];
        if let Some(rv) = o.get("reads") {
            let allowed = format!("a list of at most {nr} lists of byte addresses (one a read port)");
            match rv.as_array() {
                None => e.push(err(format!("{at}.reads"), shown(rv), allowed)),
                Some(a) if a.len() > nr => e.push(err(format!("{at}.reads"), format!("a list of {} lists", a.len()), allowed)),
                Some(a) => {
                    for (k, lv) in a.iter().enumerate() {
                        let lat = format!("{at}.reads[{k}]");
                        let Some(l) = lv.as_array() else {
                            e.push(err(&lat, shown(lv), "a list of byte addresses"));
                            continue;
                        };
                        let mut bad = Vec::new();
                        for (j, x) in l.iter().enumerate() {
                            match word_addr(p, format!("{lat}[{j}]"), Some(x)) {
                                Ok(a) => reads[k].push((j, a)),
                                Err(x) => bad.push(x),
                            }
                        }
                        e.capped(&lat, bad);
                    }
                }
            }
        }

        // writes: per port, the good writes with their index; and the
        // (address, strobes) of every write whose address is good.
        let mut writes: Vec<Vec<(usize, Write)>> = vec![Vec::new(); nw];
        let mut placed: Vec<(usize, usize, u64, u32)> = Vec::new();
        if let Some(wv) = o.get("writes") {
            let allowed = format!("a list of at most {nw} lists of writes (one a write port)");
            match wv.as_array() {
                None => e.push(err(format!("{at}.writes"), shown(wv), allowed)),
                Some(a) if a.len() > nw => e.push(err(format!("{at}.writes"), format!("a list of {} lists", a.len()), allowed)),
                Some(a) => {
                    for (k, lv) in a.iter().enumerate() {
                        let lat = format!("{at}.writes[{k}]");
                        let Some(l) = lv.as_array() else {
                            e.push(err(&lat, shown(lv), "a list of writes {\"addr\", \"data\", \"strb\"}"));
                            continue;
                        };
                        for (j, x) in l.iter().enumerate() {
                            let (addr, wr) = parse_write(&mut e, &format!("{lat}[{j}]"), x, p);
                            if let Some(a) = addr {
                                placed.push((k, j, a, wr.as_ref().map_or(all_strobes(p), |w| w.strb)));
                            }
                            if let Some(w) = wr {
                                writes[k].push((j, w));
                            }
                        }
                    }
                }
            }
        }

        // The phase's rules.
        let mut bad = Vec::new();
        // spec: a write "touches" its word whatever its strobes (even none).
        // The first port (and its write) to write each word.
        let mut owner: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        for &(k, j, a, _) in &placed {
            match owner.get(&a) {
                Some(&(k0, j0)) if k0 != k => bad.push(err(
                    format!("{at}.writes[{k}][{j}].addr"),
                    a,
                    format!("a word no other port writes in this phase ({at}.writes[{k0}][{j0}] writes it)"),
                )),
                Some(_) => {}
                None => {
                    owner.insert(a, (k, j));
                }
            }
        }
        for (k, l) in reads.iter().enumerate() {
            for &(j, a) in l {
                let rat = format!("{at}.reads[{k}][{j}]");
                if let Some(&(k0, j0)) = owner.get(&a) {
                    bad.push(err(&rat, a, format!("a word this phase does not write ({at}.writes[{k0}][{j0}] writes it)")));
                }
                // spec: "every byte ... was written" counts the bytes whose
                // strobe was set in an earlier phase's write.
                let missing: Vec<String> = (0..dbu).filter(|b| !written.contains(&(a + b))).map(|b| b.to_string()).collect();
                if missing.len() as u64 == dbu {
                    bad.push(err(&rat, a, "a word earlier phases wrote in full (no byte of it was written)"));
                } else if !missing.is_empty() {
                    bad.push(err(
                        &rat,
                        a,
                        match missing.len() {
                            1 => format!("a word earlier phases wrote in full (its byte {} was not written)", missing[0]),
                            _ => format!("a word earlier phases wrote in full (its bytes {} were not written)", missing.join(", ")),
                        },
                    ));
                }
            }
        }
        e.capped(&at, bad);
        for &(_, _, a, strb) in &placed {
            for b in 0..dbu {
                if strb >> b & 1 == 1 {
                    written.insert(a + b);
                }
            }
        }
        phases.push(Phase {
            reads: reads.into_iter().map(|l| l.into_iter().map(|(_, a)| a).collect()).collect(),
            writes: writes.into_iter().map(|l| l.into_iter().map(|(_, w)| w).collect()).collect(),
        });
    }
    e.finish(|| Workload { phases })
}

/// One write `{addr, data, strb}`: its address if good, and the write if
/// every part of it is.
fn parse_write(e: &mut Violations, at: &str, x: &Value, p: &ScratchpadParams) -> (Option<u64>, Option<Write>) {
    let Some(o) = x.as_object() else {
        e.push(err(at, shown(x), "an object"));
        return (None, None);
    };
    for k in o.keys() {
        if !["addr", "data", "strb"].contains(&k.as_str()) {
            e.push(err(format!("{at}.{k}"), "(given)", "absent: keys are addr, data, strb"));
        }
    }
    let addr = e.take(word_addr(p, format!("{at}.addr"), o.get("addr")));
    let data_allowed = format!("a hex string \"0x...\" of at most {} bits", p.data_bits);
    let data = e.take(match o.get("data") {
        None => Err(err(format!("{at}.data"), "(missing)", data_allowed)),
        Some(d) => match parse_hex(d) {
            Some(v) if v.bits() <= p.data_bits as u64 => Ok(v),
            _ => Err(err(format!("{at}.data"), shown(d), data_allowed)),
        },
    });
    let strb_allowed = format!("a hex string \"0x...\" of at most {} bits", db(p));
    let strb = e.take(match o.get("strb") {
        None => Ok(all_strobes(p)),
        Some(s) => match parse_hex(s) {
            Some(v) if v.bits() <= db(p) => Ok(v.iter_u32_digits().next().unwrap_or(0)),
            _ => Err(err(format!("{at}.strb"), shown(s), strb_allowed)),
        },
    });
    let w = match (addr, data, strb) {
        (Some(addr), Some(data), Some(strb)) => Some(Write { addr, data, strb }),
        _ => None,
    };
    (addr, w)
}

/// The output file (docs/scratchpad.md "`gpurtl run scratchpad` output").
pub fn output_json(p: &ScratchpadParams, o: &Outcome) -> Value {
    let digits = (p.data_bits / 4) as usize;
    let phases: Vec<Value> = o
        .phases
        .iter()
        .map(|ph| {
            let reads: Vec<Value> = ph
                .reads
                .iter()
                .map(|l| l.iter().map(|w| Value::String(format!("0x{:0>digits$}", w.to_str_radix(16)))).collect())
                .collect();
            json!({"reads": reads, "writes": ph.writes, "cycles": ph.cycles})
        })
        .collect();
    json!({
        "phases": phases,
        "cycles": o.cycles,
        "counters": {
            "reads": o.counters.reads,
            "writes": o.counters.writes,
            "conflict_waits": o.counters.conflict_waits,
        },
    })
}

/// A random run of `phases` phases with at most `per_port` requests a port
/// in each, within the input rules, aimed at the corners: ports meeting in
/// one bank (words drawn from a few, often all in one bank), reads of words
/// the previous phase wrote, a port writing one word twice, partial and
/// empty strobes (a word is read only once its every byte is written),
/// empty phases and idle ports, the last word of the scratchpad.
///
// spec: the rule that holds a read of the row being written in its cycle
// cannot be met within the input rules: the row of bank b is one word, and
// a phase may not read a word it writes. `hazards` breaks that rule on
// purpose so that the testbench meets the hold.
/// With `hazards`, some phases also read a word they write, both as the
/// first request of their ports so that they meet in the phase's first
/// cycle (the read held for the write of its row). That breaks the input
/// rule "no word is both read and written": only the cycle simulation
/// ([`super::run`]) gives such a run's results, and `parse_input` rejects
/// it.
pub fn random_workload(rng: &mut Rng, p: &ScratchpadParams, phases: usize, per_port: usize, hazards: bool) -> Workload {
    let (nr, nw) = (p.read_ports as usize, p.write_ports as usize);
    let nb = p.banks as u64;
    let words = nb * p.words as u64;
    let dbu = db(p);
    let full = all_strobes(p);

    // A few words most requests use: all in one bank, or anywhere.
    let pool_size = *rng.pick(&[1u64, 2, nb, 2 * nb, 8, 32]);
    let one_bank = rng.chance(40);
    let bank = rng.below(nb);
    let pool: Vec<u64> = (0..pool_size.min(words))
        .map(|_| if one_bank { rng.below(p.words as u64) * nb + bank } else { rng.below(words) })
        .collect();
    let pick_word = |rng: &mut Rng| -> u64 {
        match rng.below(10) {
            0 => words - 1,
            1 | 2 => rng.below(words),
            _ => *rng.pick(&pool),
        }
    };

    // Bytes of each word written by the earlier phases (a strobe mask), and
    // the words the previous phase wrote.
    let mut masks: BTreeMap<u64, u32> = BTreeMap::new();
    let mut last_written: Vec<u64> = Vec::new();
    let mut out = Vec::new();
    for _ in 0..phases {
        let mut ph = Phase { reads: vec![Vec::new(); nr], writes: vec![Vec::new(); nw] };
        if rng.chance(10) {
            out.push(ph);
            continue;
        }
        // Writes: a word belongs to the first port that writes it.
        let mut owner: BTreeMap<u64, usize> = BTreeMap::new();
        for (k, list) in ph.writes.iter_mut().enumerate() {
            for _ in 0..rng.below(per_port as u64 + 1) {
                let word = match list.last() {
                    Some(w) if rng.chance(15) => w.addr / dbu,
                    _ => pick_word(rng),
                };
                if owner.get(&word).is_some_and(|&o| o != k) {
                    continue;
                }
                owner.insert(word, k);
                let strb = match rng.below(10) {
                    0..=5 => full,
                    6 => 0,
                    _ => rng.below(full as u64 + 1) as u32,
                };
                let bytes: Vec<u8> = (0..dbu).map(|_| rng.below(256) as u8).collect();
                list.push(Write { addr: word * dbu, data: BigUint::from_bytes_le(&bytes), strb });
            }
        }
        // Reads: words written in full by the earlier phases and not by this
        // one, the previous phase's most often.
        let readable: Vec<u64> = masks.iter().filter(|&(w, &m)| m == full && !owner.contains_key(w)).map(|(&w, _)| w).collect();
        let recent: Vec<u64> = last_written.iter().copied().filter(|w| readable.contains(w)).collect();
        if !readable.is_empty() {
            for list in ph.reads.iter_mut() {
                for _ in 0..rng.below(per_port as u64 + 1) {
                    let word = if !recent.is_empty() && rng.chance(50) { *rng.pick(&recent) } else { *rng.pick(&readable) };
                    list.push(word * dbu);
                }
            }
        }
        // A hazard: a word in full from earlier phases, written first by a
        // port that owns it (or nobody) and read first by a read port.
        if hazards && rng.chance(50) {
            let k = rng.below(nw as u64) as usize;
            let cands: Vec<u64> =
                masks.iter().filter(|&(w, &m)| m == full && owner.get(w).is_none_or(|&o| o == k)).map(|(&w, _)| w).collect();
            if !cands.is_empty() {
                let word = *rng.pick(&cands);
                let bytes: Vec<u8> = (0..dbu).map(|_| rng.below(256) as u8).collect();
                ph.writes[k].insert(0, Write { addr: word * dbu, data: BigUint::from_bytes_le(&bytes), strb: full });
                let r = rng.below(nr as u64) as usize;
                ph.reads[r].insert(0, word * dbu);
            }
        }
        last_written.clear();
        for list in &ph.writes {
            for w in list {
                *masks.entry(w.addr / dbu).or_insert(0) |= w.strb;
                last_written.push(w.addr / dbu);
            }
        }
        out.push(ph);
    }
    Workload { phases: out }
}
