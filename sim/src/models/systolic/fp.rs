//! Floating-point arithmetic of the systolic grid, written from
//! `docs/systolic.md`, "Floating point", only.
//!
//! Pure functions over bit patterns: elements in the low bits of a `u32`,
//! binary32 values as their `u32` pattern. Nothing here uses the host's float
//! arithmetic for a result: values are decoded into an integer significand
//! and a power of two, products and sums are formed exactly in integers and
//! rounded to nearest even by [`Format::round`]. (`to_f64` builds an `f64`
//! from its bits, for printing and for the tests.)
//!
//! ```text
//! mul(ta, a, tb, b)  a or b zero -> +0; NaN -> 0x7FC00000; Inf -> Inf (sign xor);
//!                    else RNE(exact a*b), canonical
//! add(x, y)          IEEE binary32 add, RNE, canonical
//! step(ta, tb, a, b) the lane tree: products padded with +0 to a power of two,
//!                    pairs added level by level ((p0+p1)+(p2+p3))+...
//! start(c0)          c0 + +0 (-0 -> +0, NaN -> 0x7FC00000)
//! mac(acc, t)        acc + t
//! canonical          -0 -> +0, any NaN -> 0x7FC00000
//! ```
//!
//! `run` uses it for floating-point element types (the reference C of
//! `reference.rs`); [`FpType::of`] maps the parameters' element type.

/// The canonical NaN: every NaN the grid computes is this pattern.
pub const NAN: u32 = 0x7FC0_0000;
/// binary32 +Inf.
pub const INF: u32 = 0x7F80_0000;
const SIGN32: u32 = 0x8000_0000;

/// A floating-point element type (`a_type` / `b_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FpType {
    Bf16,
    Fp16,
    Fp8E4M3,
    Fp8E5M2,
}

/// Every element type, in the spec's order.
pub const FP_TYPES: [FpType; 4] = [FpType::Bf16, FpType::Fp16, FpType::Fp8E4M3, FpType::Fp8E5M2];

/// A binary format: field widths, bias, the largest finite magnitude
/// (pattern without the sign) and whether the all-ones exponent is Inf/NaN
/// (IEEE) or, as in E4M3, only the all-ones pattern is NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub name: &'static str,
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub max_finite: u32,
    pub ieee_specials: bool,
}

/// IEEE 754 binary32: the accumulator, C0 and C.
pub const BINARY32: Format =
    Format { name: "binary32", exp_bits: 8, man_bits: 23, bias: 127, max_finite: 0x7F7F_FFFF, ieee_specials: true };

/// A decoded pattern. `Finite` is (-1)^neg · sig · 2^exp with sig > 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Zero { neg: bool },
    Finite { neg: bool, sig: u64, exp: i32 },
    Inf { neg: bool },
    NaN,
}

impl FpType {
    /// The floating-point type of a parameter's element type (`None` for
    /// the integer types).
    pub fn of(t: gpurtl_params::systolic::ElemType) -> Option<FpType> {
        use gpurtl_params::systolic::ElemType;
        match t {
            ElemType::Bf16 => Some(FpType::Bf16),
            ElemType::Fp16 => Some(FpType::Fp16),
            ElemType::Fp8e4m3 => Some(FpType::Fp8E4M3),
            ElemType::Fp8e5m2 => Some(FpType::Fp8E5M2),
            _ => None,
        }
    }
    pub fn format(self) -> Format {
        match self {
            FpType::Bf16 => Format { name: "bf16", exp_bits: 8, man_bits: 7, bias: 127, max_finite: 0x7F7F, ieee_specials: true },
            FpType::Fp16 => Format { name: "fp16", exp_bits: 5, man_bits: 10, bias: 15, max_finite: 0x7BFF, ieee_specials: true },
            FpType::Fp8E4M3 => {
                Format { name: "fp8e4m3", exp_bits: 4, man_bits: 3, bias: 7, max_finite: 0x7E, ieee_specials: false }
            }
            FpType::Fp8E5M2 => Format { name: "fp8e5m2", exp_bits: 5, man_bits: 2, bias: 15, max_finite: 0x7B, ieee_specials: true },
        }
    }
    /// The parameter value's name (`bf16`, `fp16`, `fp8e4m3`, `fp8e5m2`).
    pub fn name(self) -> &'static str {
        self.format().name
    }
    /// Bits of an element: 16 or 8.
    pub fn bits(self) -> u32 {
        self.format().bits()
    }
    /// The element `bits` (its low `self.bits()` bits).
    pub fn decode(self, bits: u32) -> Value {
        self.format().decode(bits)
    }
    /// +0 or -0.
    pub fn is_zero(self, bits: u32) -> bool {
        bits & self.format().magnitude_mask() == 0
    }
    /// A number rounded to this type: nearest, ties to the even mantissa
    /// field, exponent unbounded above; a result beyond the largest finite
    /// value, NaN or Inf is an error naming the number.
    pub fn from_f64(self, x: f64) -> Result<u32, String> {
        self.format().from_f64(x)
    }
    /// The element's value as an `f64` (exact: every element is an f64).
    pub fn to_f64(self, bits: u32) -> f64 {
        self.format().decode(bits).to_f64()
    }
}

impl Format {
    pub fn bits(&self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }
    fn magnitude_mask(&self) -> u32 {
        (1u32 << (self.bits() - 1)) - 1
    }
    fn sign_bit(&self) -> u32 {
        1u32 << (self.bits() - 1)
    }
    /// Exponent of the smallest subnormal (the spacing below the normals).
    fn q_min(&self) -> i32 {
        1 - self.bias - self.man_bits as i32
    }

    /// Decoding of the spec: e = 0: m · 2^(1-bias-w); e > 0: (2^w + m) · 2^(e-bias-w).
    pub fn decode(&self, bits: u32) -> Value {
        let bits = bits & ((1u64 << self.bits()) - 1) as u32;
        let neg = bits & self.sign_bit() != 0;
        let mag = bits & self.magnitude_mask();
        let e = mag >> self.man_bits;
        let m = mag & ((1u32 << self.man_bits) - 1);
        let e_max = (1u32 << self.exp_bits) - 1;
        if self.ieee_specials && e == e_max {
            return if m == 0 { Value::Inf { neg } } else { Value::NaN };
        }
        if !self.ieee_specials && mag == self.magnitude_mask() {
            return Value::NaN;
        }
        if mag == 0 {
            return Value::Zero { neg };
        }
        if e == 0 {
            Value::Finite { neg, sig: m as u64, exp: self.q_min() }
        } else {
            Value::Finite { neg, sig: ((1u64 << self.man_bits) | m as u64), exp: e as i32 - self.bias - self.man_bits as i32 }
        }
    }

    /// Rounds mag · 2^exp (mag > 0) to this format, to nearest with ties to
    /// the even mantissa field, the exponent unbounded above. Returns the
    /// magnitude pattern (exponent field above the mantissa field), which
    /// exceeds `max_finite` when the value is beyond the largest finite
    /// value (`u64`: no unbounded pattern reached here overflows it).
    pub fn round(&self, mag: u128, exp: i32) -> u64 {
        debug_assert!(mag > 0);
        let w = self.man_bits as i32;
        let top = 127 - mag.leading_zeros() as i32 + exp; // the value is in [2^top, 2^(top+1))
        let q = top.max(1 - self.bias) - w; // the spacing there, 2^q
        let shift = q - exp;
        let sig = if shift <= 0 { mag << (-shift) as u32 } else { shift_rne(mag, shift as u32) };
        // sig <= 2^(w+1); a carry into 2^(w+1) moves the exponent up by itself.
        (((q - self.q_min()) as u64) << self.man_bits) + sig as u64
    }

    /// Rounds a number to this format; beyond the largest finite value, NaN
    /// and Inf are errors.
    pub fn from_f64(&self, x: f64) -> Result<u32, String> {
        if x.is_nan() {
            return Err(format!("NaN is not a number for {}: give it as a bit pattern", self.name));
        }
        if x.is_infinite() {
            return Err(format!("{x} is not finite: give {} infinities as bit patterns", self.name));
        }
        let b = x.to_bits();
        let sign = if b >> 63 != 0 { self.sign_bit() } else { 0 };
        let e = ((b >> 52) & 0x7FF) as i32;
        let m = b & ((1u64 << 52) - 1);
        if e == 0 && m == 0 {
            return Ok(sign);
        }
        let (sig, exp) = if e == 0 { (m, -1074) } else { (m | (1u64 << 52), e - 1075) };
        let code = self.round(sig as u128, exp);
        if code > self.max_finite as u64 {
            return Err(format!(
                "{x} is beyond {}'s largest finite value {}",
                self.name,
                self.decode(self.max_finite).to_f64()
            ));
        }
        Ok(sign | code as u32)
    }
}

/// mag / 2^s rounded to nearest, ties to even (s >= 1).
fn shift_rne(mag: u128, s: u32) -> u128 {
    if s > 128 {
        return 0; // mag < 2^128 <= half
    }
    let (q, rem) = if s == 128 { (0, mag) } else { (mag >> s, mag & ((1u128 << s) - 1)) };
    let half = 1u128 << (s - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

impl Value {
    /// The value as an `f64`, built from its bits (exact for every value of
    /// these formats: all are f64 normals).
    pub fn to_f64(self) -> f64 {
        match self {
            Value::NaN => f64::NAN,
            Value::Inf { neg } => {
                if neg {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            Value::Zero { neg } => f64::from_bits((neg as u64) << 63),
            Value::Finite { neg, sig, exp } => {
                let p = 63 - sig.leading_zeros() as i32; // sig in [2^p, 2^(p+1))
                let e = p + exp;
                assert!((-1022..=1023).contains(&e), "not an f64 normal");
                let frac = (sig << (52 - p)) & ((1u64 << 52) - 1);
                f64::from_bits(((neg as u64) << 63) | (((e + 1023) as u64) << 52) | frac)
            }
        }
    }
}

/// -0 -> +0, any NaN -> 0x7FC00000, every other pattern as it is.
pub fn canonical(x: u32) -> u32 {
    if x == SIGN32 {
        0
    } else if x & 0x7FFF_FFFF > INF {
        NAN
    } else {
        x
    }
}

/// RNE of (-1)^neg · mag · 2^exp to binary32, canonical (overflow -> Inf,
/// zero -> +0).
fn to_binary32(neg: bool, mag: u128, exp: i32) -> u32 {
    if mag == 0 {
        return 0;
    }
    let code = BINARY32.round(mag, exp);
    let code = if code > BINARY32.max_finite as u64 { INF } else { code as u32 };
    if code == 0 {
        0
    } else {
        code | if neg { SIGN32 } else { 0 }
    }
}

/// The product a ⊗ b as binary32 bits (the spec's four product rules).
pub fn mul(ta: FpType, a: u32, tb: FpType, b: u32) -> u32 {
    let (x, y) = (ta.decode(a), tb.decode(b));
    match (x, y) {
        (Value::Zero { .. }, _) | (_, Value::Zero { .. }) => 0,
        (Value::NaN, _) | (_, Value::NaN) => NAN,
        (Value::Inf { neg: n1 }, Value::Inf { neg: n2 })
        | (Value::Inf { neg: n1 }, Value::Finite { neg: n2, .. })
        | (Value::Finite { neg: n1, .. }, Value::Inf { neg: n2 }) => INF | if n1 != n2 { SIGN32 } else { 0 },
        (Value::Finite { neg: n1, sig: s1, exp: e1 }, Value::Finite { neg: n2, sig: s2, exp: e2 }) => {
            to_binary32(n1 != n2, s1 as u128 * s2 as u128, e1 + e2)
        }
    }
}

/// x ⊕ y: IEEE binary32 addition rounded to nearest even, canonical.
pub fn add(x: u32, y: u32) -> u32 {
    let (vx, vy) = (BINARY32.decode(x), BINARY32.decode(y));
    match (vx, vy) {
        (Value::NaN, _) | (_, Value::NaN) => NAN,
        (Value::Inf { neg: n1 }, Value::Inf { neg: n2 }) => {
            if n1 == n2 {
                x
            } else {
                NAN
            }
        }
        (Value::Inf { .. }, _) => x,
        (_, Value::Inf { .. }) => y,
        (Value::Zero { .. }, Value::Zero { .. }) => 0,
        (Value::Zero { .. }, _) => y,
        (_, Value::Zero { .. }) => x,
        (Value::Finite { .. }, Value::Finite { .. }) => {
            // big has the larger magnitude (patterns order as magnitudes), so
            // its exponent is at least small's.
            let (big, small) = if x & 0x7FFF_FFFF >= y & 0x7FFF_FFFF { (vx, vy) } else { (vy, vx) };
            let (Value::Finite { neg: nb, sig: sb, exp: eb }, Value::Finite { neg: ns, sig: ss, exp: es }) = (big, small)
            else {
                unreachable!()
            };
            // Frame: units of 2^(eb - 100); big is sb << 100 (< 2^124).
            const F: i32 = 100;
            let d = eb - es;
            let big_m = (sb as u128) << F;
            // d > F: big is a normal (sb >= 2^23) and small < 2^23 units, so
            // the sum lies strictly between big and a neighbour of big no
            // further than 2^23 units away, while the rounding points and
            // midpoints near big are >= 2^98 units apart: a sticky unit
            // rounds the same. (Any F >= 26 would do; the tests catch 24.)
            let small_m = if d <= F { (ss as u128) << (F - d) as u32 } else { 1 };
            let mag = if nb == ns { big_m + small_m } else { big_m - small_m };
            to_binary32(nb, mag, eb - F)
        }
    }
}

/// The lane tree of a list of products: padded with +0 to the next power of
/// two, then pairs added level by level (lanes 4: (p0 ⊕ p1) ⊕ (p2 ⊕ p3)).
pub fn tree(products: &[u32]) -> u32 {
    assert!(!products.is_empty(), "a k-step has at least one lane");
    let mut level: Vec<u32> = products.to_vec();
    level.resize(products.len().next_power_of_two(), 0);
    while level.len() > 1 {
        level = level.chunks(2).map(|p| add(p[0], p[1])).collect();
    }
    level[0]
}

/// One k-step's sum t: the products of the lanes (A's lane l with B's lane
/// l) summed by [`tree`].
pub fn step(ta: FpType, tb: FpType, a_lanes: &[u32], b_lanes: &[u32]) -> u32 {
    assert_eq!(a_lanes.len(), b_lanes.len(), "A and B give the same number of lanes");
    let products: Vec<u32> = a_lanes.iter().zip(b_lanes).map(|(&a, &b)| mul(ta, a, tb, b)).collect();
    tree(&products)
}

/// The accumulator's start: C0 ⊕ +0 (-0 -> +0, NaN -> 0x7FC00000); +0
/// without C0 is `start(0)`.
pub fn start(c0: u32) -> u32 {
    add(c0, 0)
}

/// One accumulation: acc ⊕ t.
pub fn mac(acc: u32, t: u32) -> u32 {
    add(acc, t)
}

/// A binary32 number for C0: rounded to nearest even; beyond the largest
/// finite value, NaN and Inf are errors.
pub fn f32_from_f64(x: f64) -> Result<u32, String> {
    BINARY32.from_f64(x)
}

#[cfg(test)]
mod tests;
