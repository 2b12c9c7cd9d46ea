//! Human units in workload files: `"50 ms"`, `"2 MiB"`, `"6 GB/s"`, `"60%"`.
//!
//! Every quantity becomes an exact integer (DESIGN.md §3.3): decimals are
//! parsed with integer arithmetic, and a value that is not a whole number of
//! the base unit (`"1.5 ns"`, `"0.5 B"`) is an error rather than a rounding.
//!
//! | quantity  | base unit      | units                                              |
//! |-----------|----------------|----------------------------------------------------|
//! | duration  | nanoseconds    | `ns`, `us` (also `µs`, `μs`), `ms`, `s`             |
//! | size      | bytes          | `B`, `kB`/`KB`, `MB`, `GB`, `TB` (powers of 1000), `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) |
//! | bandwidth | bytes / second | any size unit followed by `/s`                       |
//! | percent   | parts per million | `%`                                             |
//!
//! A number may have a fractional part (`"2.5 us"`) and `_` separators
//! between digits (`"1_000 ns"`); whitespace between number and unit is
//! optional. Signs, exponents and bare numbers are rejected.

use std::fmt;

/// Which kind of quantity a string was supposed to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Duration,
    Size,
    Bandwidth,
    Percent,
}

impl Quantity {
    /// The quantity's name in messages ("a duration").
    pub fn describe(self) -> &'static str {
        match self {
            Quantity::Duration => "a duration",
            Quantity::Size => "a size",
            Quantity::Bandwidth => "a bandwidth",
            Quantity::Percent => "a percentage",
        }
    }

    /// An example value, as written in a file.
    pub fn example(self) -> &'static str {
        match self {
            Quantity::Duration => "10 ms",
            Quantity::Size => "2 MiB",
            Quantity::Bandwidth => "6 GB/s",
            Quantity::Percent => "60%",
        }
    }

    /// The unit a bare number most likely meant, for "write ..." hints.
    fn hint_unit(self) -> &'static str {
        match self {
            Quantity::Duration => " ms",
            Quantity::Size => " MiB",
            Quantity::Bandwidth => " GB/s",
            Quantity::Percent => "%",
        }
    }

    fn base_unit(self) -> &'static str {
        match self {
            Quantity::Duration => "nanoseconds",
            Quantity::Size => "bytes",
            Quantity::Bandwidth => "bytes per second",
            Quantity::Percent => "parts per million",
        }
    }

    fn units(self) -> &'static [(&'static str, u64)] {
        match self {
            Quantity::Duration => DURATION_PARSE_UNITS,
            Quantity::Size => SIZE_UNITS,
            Quantity::Bandwidth => BANDWIDTH_UNITS,
            Quantity::Percent => PERCENT_UNITS,
        }
    }
}

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000), // U+00B5 MICRO SIGN
    ("μs", 1_000), // U+03BC GREEK SMALL LETTER MU
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// What a duration may be written in: [`DURATION_UNITS`] (which the
/// formatting uses), and minutes as rtla and cyclictest write them (`1m`)
/// or spelled out, and hours.
const DURATION_PARSE_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

const BANDWIDTH_UNITS: &[(&str, u64)] = &[
    ("B/s", 1),
    ("kB/s", 1_000),
    ("KB/s", 1_000),
    ("MB/s", 1_000_000),
    ("GB/s", 1_000_000_000),
    ("TB/s", 1_000_000_000_000),
    ("KiB/s", 1 << 10),
    ("MiB/s", 1 << 20),
    ("GiB/s", 1 << 30),
    ("TiB/s", 1 << 40),
];

/// 1% = 10 000 ppm.
const PERCENT_UNITS: &[(&str, u64)] = &[("%", 10_000)];

/// More decimals than this are rejected (the mantissa must fit in `u128`).
const MAX_DECIMALS: u32 = 30;

/// Why a quantity string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitError {
    /// The string is empty or only whitespace.
    Empty { quantity: Quantity },
    /// The string starts with `-`.
    Negative { quantity: Quantity },
    /// No number at the start (`"ms"`, `"ten ms"`, `"1e3 ns"`).
    NotANumber { quantity: Quantity, text: String },
    /// A number without a unit (`"10"`).
    MissingUnit { quantity: Quantity, number: String },
    /// A unit that is not known for this quantity.
    UnknownUnit {
        quantity: Quantity,
        unit: String,
        suggestion: Option<&'static str>,
    },
    /// The value is not a whole number of the base unit (`"1.5 ns"`).
    NotWhole { quantity: Quantity, text: String },
    /// More than 30 decimals.
    TooManyDecimals { quantity: Quantity },
    /// The value does not fit the integer type.
    Overflow { quantity: Quantity, text: String },
}

impl UnitError {
    pub fn quantity(&self) -> Quantity {
        match self {
            UnitError::Empty { quantity }
            | UnitError::Negative { quantity }
            | UnitError::NotANumber { quantity, .. }
            | UnitError::MissingUnit { quantity, .. }
            | UnitError::UnknownUnit { quantity, .. }
            | UnitError::NotWhole { quantity, .. }
            | UnitError::TooManyDecimals { quantity }
            | UnitError::Overflow { quantity, .. } => *quantity,
        }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::Empty { quantity } => write!(
                f,
                "expected {} like \"{}\", found an empty string",
                quantity.describe(),
                quantity.example()
            ),
            UnitError::Negative { quantity } => {
                write!(f, "{} must not be negative", quantity.describe())
            }
            UnitError::NotANumber { quantity, text } => write!(
                f,
                "expected {} like \"{}\", found \"{}\"",
                quantity.describe(),
                quantity.example(),
                text.escape_debug()
            ),
            UnitError::MissingUnit { quantity, number } => write!(
                f,
                "missing unit: expected {} like \"{}\", found \"{}\" (write \"{}{}\")",
                quantity.describe(),
                quantity.example(),
                number,
                number,
                quantity.hint_unit()
            ),
            UnitError::UnknownUnit {
                quantity,
                unit,
                suggestion,
            } => {
                write!(
                    f,
                    "unknown unit `{}` for {}",
                    unit.escape_debug(),
                    quantity.describe()
                )?;
                if let Some(s) = suggestion {
                    write!(f, "; did you mean `{s}`?")?;
                    if unit.ends_with('b') || unit.ends_with("b/s") {
                        write!(f, " (a lowercase `b` means bits; sizes are in bytes)")?;
                    }
                    Ok(())
                } else {
                    let mut names: Vec<&str> = Vec::new();
                    for (u, _) in quantity.units() {
                        if *u != "μs" && *u != "KB" && *u != "KB/s" {
                            names.push(u);
                        }
                    }
                    write!(f, " (expected one of: {})", names.join(", "))
                }
            }
            UnitError::NotWhole { quantity, text } => write!(
                f,
                "\"{}\" is not a whole number of {}",
                text.escape_debug(),
                quantity.base_unit()
            ),
            UnitError::TooManyDecimals { quantity } => write!(
                f,
                "{} may have at most {MAX_DECIMALS} decimals",
                quantity.describe()
            ),
            UnitError::Overflow { quantity, text } => write!(
                f,
                "\"{}\" is too large for {} (at most {} {})",
                text.escape_debug(),
                quantity.describe(),
                u64::MAX,
                quantity.base_unit()
            ),
        }
    }
}

impl std::error::Error for UnitError {}

/// Parses a duration into nanoseconds: `"50 ms"`, `"2.5us"`, `"0.63 µs"`.
pub fn parse_duration(text: &str) -> Result<u64, UnitError> {
    parse_quantity(text, Quantity::Duration)
}

/// Parses a size into bytes: `"2 MiB"`, `"6.5 MB"`, `"4096 B"`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    parse_quantity(text, Quantity::Size)
}

/// Parses a bandwidth into bytes per second: `"6 GB/s"`, `"800 MiB/s"`.
pub fn parse_bandwidth(text: &str) -> Result<u64, UnitError> {
    parse_quantity(text, Quantity::Bandwidth)
}

/// Parses a percentage into parts per million: `"60%"` = 600 000.
pub fn parse_percent_ppm(text: &str) -> Result<u64, UnitError> {
    parse_quantity(text, Quantity::Percent)
}

/// Parses `text` as `quantity` into its base unit.
pub fn parse_quantity(text: &str, quantity: Quantity) -> Result<u64, UnitError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(UnitError::Empty { quantity });
    }
    if trimmed.starts_with('-') {
        return Err(UnitError::Negative { quantity });
    }
    let (number, unit_text) = split_number(trimmed).ok_or_else(|| UnitError::NotANumber {
        quantity,
        text: trimmed.to_string(),
    })?;
    let unit_text = unit_text.trim();
    // Zero is zero in every unit.
    if unit_text.is_empty() && number.bytes().all(|b| matches!(b, b'0' | b'.' | b'_')) {
        return Ok(0);
    }
    if unit_text.is_empty() {
        return Err(UnitError::MissingUnit {
            quantity,
            number: trimmed.to_string(),
        });
    }
    let multiplier = lookup_unit(quantity, unit_text)?;
    let decimal = Decimal::parse(number).map_err(|e| match e {
        DecimalError::TooManyDecimals => UnitError::TooManyDecimals { quantity },
        DecimalError::Overflow => UnitError::Overflow {
            quantity,
            text: trimmed.to_string(),
        },
    })?;
    let scaled = decimal
        .mantissa
        .checked_mul(u128::from(multiplier))
        .ok_or_else(|| UnitError::Overflow {
            quantity,
            text: trimmed.to_string(),
        })?;
    // MAX_DECIMALS <= 38, so 10^scale fits in u128.
    let divisor = 10u128.pow(decimal.scale);
    if scaled % divisor != 0 {
        return Err(UnitError::NotWhole {
            quantity,
            text: trimmed.to_string(),
        });
    }
    u64::try_from(scaled / divisor).map_err(|_| UnitError::Overflow {
        quantity,
        text: trimmed.to_string(),
    })
}

fn lookup_unit(quantity: Quantity, unit: &str) -> Result<u64, UnitError> {
    let units = quantity.units();
    if let Some((_, m)) = units.iter().find(|(u, _)| *u == unit) {
        return Ok(*m);
    }
    // A case slip (`MS`, `mb`, `Gb/s`) gets a suggestion, never a guess.
    let lower = unit.to_lowercase();
    let suggestion = units
        .iter()
        .find(|(u, _)| u.to_lowercase() == lower)
        .map(|(u, _)| *u)
        .or_else(|| {
            units
                .iter()
                .map(|(u, _)| (strsim::jaro_winkler(u, unit), *u))
                .filter(|(score, _)| *score > 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, u)| u)
        });
    Err(UnitError::UnknownUnit {
        quantity,
        unit: unit.to_string(),
        suggestion,
    })
}

/// Splits `"12.5 ms"` into `("12.5", " ms")`. `None` if there is no number
/// at the start.
fn split_number(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut end = 0;
    let mut seen_digit = false;
    let mut seen_dot = false;
    while let Some(&b) = bytes.get(end) {
        match b {
            b'0'..=b'9' => seen_digit = true,
            b'_' => {}
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        end += 1;
    }
    if !seen_digit {
        return None;
    }
    let (number, rest) = text.split_at(end);
    // A number directly followed by letters that make it something else
    // (`1e3`, `0x10`) is not a plain decimal.
    // `e`/`x` never start a unit we know.
    if rest.starts_with(['e', 'E', 'x', 'X']) {
        return None;
    }
    if !valid_digits(number) {
        return None;
    }
    Some((number, rest))
}

/// Digits with `_` only between digits, at most one `.` with digits on both
/// sides.
fn valid_digits(number: &str) -> bool {
    let mut parts = number.split('.');
    let int_part = parts.next().unwrap_or("");
    let frac_part = parts.next();
    let group_ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('_')
            && !s.ends_with('_')
            && !s.contains("__")
            && s.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    };
    group_ok(int_part) && frac_part.map_or(true, group_ok)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    /// value = mantissa / 10^scale
    mantissa: u128,
    scale: u32,
}

enum DecimalError {
    TooManyDecimals,
    Overflow,
}

impl Decimal {
    fn parse(number: &str) -> Result<Decimal, DecimalError> {
        let (int_part, frac_part) = match number.split_once('.') {
            Some((i, f)) => (i, f),
            None => (number, ""),
        };
        // Trailing zeros after the point change nothing; dropping them keeps
        // "1.500000000000000000000000000000000000 s" parseable.
        let frac_part = frac_part.trim_end_matches(['0', '_']);
        let mut mantissa: u128 = 0;
        let mut scale: u32 = 0;
        for b in int_part.bytes().filter(|b| b.is_ascii_digit()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(u128::from(b - b'0')))
                .ok_or(DecimalError::Overflow)?;
        }
        for b in frac_part.bytes().filter(|b| b.is_ascii_digit()) {
            scale += 1;
            if scale > MAX_DECIMALS {
                return Err(DecimalError::TooManyDecimals);
            }
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(u128::from(b - b'0')))
                .ok_or(DecimalError::Overflow)?;
        }
        Ok(Decimal { mantissa, scale })
    }
}

/// Writes `value / divisor` exactly with at most `max_decimals` decimals, or
/// `None` if that is not exact.
fn exact_decimal(value: u64, divisor: u64, max_decimals: u32) -> Option<String> {
    if divisor == 0 {
        return None;
    }
    let int = value / divisor;
    let mut rem = u128::from(value % divisor);
    let divisor = u128::from(divisor);
    let mut frac = String::new();
    let mut decimals = 0;
    while rem != 0 {
        if decimals == max_decimals {
            return None;
        }
        rem *= 10;
        let digit = rem / divisor;
        rem %= divisor;
        frac.push(char::from(b'0' + u8::try_from(digit).ok()?));
        decimals += 1;
    }
    if frac.is_empty() {
        Some(int.to_string())
    } else {
        Some(format!("{int}.{frac}"))
    }
}

/// The shortest exact spelling of `value` among `units` (ties go to the larger
/// unit), e.g. 1 500 000 ns -> `"1.5 ms"`, 6 815 744 B -> `"6.5 MiB"`.
fn format_with(value: u64, units: &[(&str, u64)], separator: &str) -> String {
    let mut best: Option<(usize, u64, String)> = None;
    for (unit, multiplier) in units {
        if *unit == "μs" || *unit == "µs" || unit.starts_with("KB") {
            continue; // spelled `us` and `kB`
        }
        if let Some(number) = exact_decimal(value, *multiplier, 3) {
            let text = format!("{number}{separator}{unit}");
            let better = match &best {
                None => true,
                Some((len, m, _)) => text.len() < *len || (text.len() == *len && *multiplier > *m),
            };
            if better {
                best = Some((text.len(), *multiplier, text));
            }
        }
    }
    best.map(|(_, _, t)| t)
        .unwrap_or_else(|| format!("{value}{separator}{}", units.first().map_or("", |u| u.0)))
}

/// Formats nanoseconds for reading, in the largest unit that fits, to at
/// most three decimals, truncated (`"12.651 ms"`): for reports, not for
/// files ([`format_duration`] is exact).
pub fn display_duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (scale, unit) in UNITS {
        if ns >= scale {
            let whole = ns / scale;
            // The first three decimals, truncated, less trailing zeros (one
            // `format!`: reports print thousands of these).
            let mut f = ns % scale / (scale / 1000);
            if f == 0 {
                return format!("{whole} {unit}");
            }
            let mut width = 3;
            while f % 10 == 0 {
                f /= 10;
                width -= 1;
            }
            return format!("{whole}.{f:0width$} {unit}");
        }
    }
    format!("{ns} ns")
}

/// Formats nanoseconds so that [`parse_duration`] gives them back exactly.
pub fn format_duration(ns: u64) -> String {
    format_with(ns, DURATION_UNITS, " ")
}

/// Formats bytes so that [`parse_size`] gives them back exactly.
pub fn format_size(bytes: u64) -> String {
    format_with(bytes, SIZE_UNITS, " ")
}

/// Formats bytes/s so that [`parse_bandwidth`] gives them back exactly.
pub fn format_bandwidth(bytes_per_sec: u64) -> String {
    format_with(bytes_per_sec, BANDWIDTH_UNITS, " ")
}

/// Formats parts per million as a percentage (`600000` -> `"60%"`).
pub fn format_ppm(ppm: u64) -> String {
    // 1% = 10^4 ppm, so four decimals are always exact.
    let number = exact_decimal(ppm, 10_000, 4).unwrap_or_else(|| ppm.to_string());
    format!("{number}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`display_duration`] as first written (a padded `format!` of the
    /// fraction, truncated and trimmed), the reference of the test below.
    fn display_duration_ref(ns: u64) -> String {
        for (scale, unit) in [
            (1_000_000_000u64, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ] {
            if ns >= scale || scale == 1 {
                let (whole, frac) = (ns / scale, ns % scale);
                if frac == 0 {
                    return format!("{whole} {unit}");
                }
                let digits = scale.ilog10() as usize;
                let mut f = format!("{frac:0digits$}");
                f.truncate(3);
                let f = f.trim_end_matches('0');
                if f.is_empty() {
                    return format!("{whole} {unit}");
                }
                return format!("{whole}.{f} {unit}");
            }
        }
        unreachable!("scale 1 always matches")
    }

    #[test]
    fn display_duration_matches_its_reference() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values = vec![0, 1, 999, 1_000, 1_001, 1_010, 1_100, 12_651_000, u64::MAX];
        for _ in 0..200_000 {
            // xorshift64, spread over every magnitude
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            assert_eq!(display_duration(v), display_duration_ref(v), "{v} ns");
        }
        assert_eq!(display_duration(12_651_000), "12.651 ms");
        assert_eq!(display_duration(1_500_000_000), "1.5 s");
        assert_eq!(display_duration(2_000_100), "2 ms");
        assert_eq!(display_duration(999), "999 ns");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("50 ms"), Ok(50_000_000));
        assert_eq!(parse_duration("2.5us"), Ok(2_500));
        assert_eq!(parse_duration("1 s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("100 ns"), Ok(100));
        assert_eq!(parse_duration("0.63 µs"), Ok(630));
        assert_eq!(parse_duration("0.63 μs"), Ok(630));
        assert_eq!(parse_duration("0.63 us"), Ok(630));
        assert_eq!(parse_duration("  7ms "), Ok(7_000_000));
        assert_eq!(parse_duration("1_000 ns"), Ok(1_000));
        assert_eq!(parse_duration("0 ns"), Ok(0));
        assert_eq!(parse_duration("1.000000000 ns"), Ok(1));
        assert_eq!(
            parse_duration("1.5000000000000000000000000000000000000000000000 s"),
            Ok(1_500_000_000)
        );
        assert_eq!(parse_duration("0.000000001 s"), Ok(1));
        assert_eq!(parse_duration("18446744073.709551615 s"), Ok(u64::MAX));
    }

    #[test]
    fn duration_errors() {
        assert!(matches!(
            parse_duration("1.5 ns"),
            Err(UnitError::NotWhole { .. })
        ));
        assert!(matches!(
            parse_duration("0.0000000001 s"),
            Err(UnitError::NotWhole { .. })
        ));
        assert!(matches!(
            parse_duration("10"),
            Err(UnitError::MissingUnit { .. })
        ));
        assert!(matches!(
            parse_duration("-5 ms"),
            Err(UnitError::Negative { .. })
        ));
        // Zero needs no unit; minutes and hours as people type them.
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("0.0"), Ok(0));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert_eq!(parse_duration("1.5 min"), Ok(90_000_000_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration("1ms"), Ok(1_000_000));
        assert!(matches!(parse_duration(""), Err(UnitError::Empty { .. })));
        assert!(matches!(
            parse_duration("ms"),
            Err(UnitError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration("1e3 ns"),
            Err(UnitError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration(".5 ms"),
            Err(UnitError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration("5. ms"),
            Err(UnitError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration("1__0 ms"),
            Err(UnitError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration("1.2.3 ms"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("18446744073.709551616 s"),
            Err(UnitError::Overflow { .. })
        ));
        assert!(matches!(
            parse_duration("99999999999999999999999999999999999999999999 s"),
            Err(UnitError::Overflow { .. })
        ));
        assert!(matches!(
            parse_duration("0.0000000000000000000000000000001 s"),
            Err(UnitError::TooManyDecimals { .. })
        ));
        match parse_duration("10 MS") {
            Err(UnitError::UnknownUnit { suggestion, .. }) => assert_eq!(suggestion, Some("ms")),
            other => panic!("{other:?}"),
        }
        match parse_duration("10 parsecs") {
            Err(
                e @ UnitError::UnknownUnit {
                    suggestion: None, ..
                },
            ) => assert!(e.to_string().contains("expected one of: ns, us, µs, ms, s")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_duration("10").map_err(|e| e.to_string()),
            Err(
                "missing unit: expected a duration like \"10 ms\", found \"10\" (write \"10 ms\")"
                    .to_string()
            )
        );
    }

    #[test]
    fn sizes_and_bandwidths() {
        assert_eq!(parse_size("2 MiB"), Ok(2 * 1024 * 1024));
        assert_eq!(parse_size("1 MB"), Ok(1_000_000));
        assert_eq!(parse_size("6.5 MB"), Ok(6_500_000));
        assert_eq!(parse_size("6.5 MiB"), Ok(6_815_744));
        assert_eq!(parse_size("512 KiB"), Ok(524_288));
        assert_eq!(parse_size("4096 B"), Ok(4096));
        assert_eq!(parse_size("1 kB"), Ok(1000));
        assert_eq!(parse_size("1 KB"), Ok(1000));
        assert!(matches!(
            parse_size("0.5 B"),
            Err(UnitError::NotWhole { .. })
        ));
        assert!(matches!(
            parse_size("0.1 KiB"),
            Err(UnitError::NotWhole { .. })
        ));
        assert_eq!(parse_bandwidth("6 GB/s"), Ok(6_000_000_000));
        assert_eq!(parse_bandwidth("5 GiB/s"), Ok(5 << 30));
        assert_eq!(parse_bandwidth("800 MB/s"), Ok(800_000_000));
        match parse_bandwidth("6 Gb/s") {
            Err(e @ UnitError::UnknownUnit { .. }) => {
                assert!(e.to_string().contains("did you mean `GB/s`?"), "{e}");
                assert!(e.to_string().contains("bits"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_size("6 GB/s"),
            Err(UnitError::UnknownUnit { .. })
        ));
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent_ppm("60%"), Ok(600_000));
        assert_eq!(parse_percent_ppm("62.5 %"), Ok(625_000));
        assert_eq!(parse_percent_ppm("0.0001%"), Ok(1));
        assert!(matches!(
            parse_percent_ppm("0.00001%"),
            Err(UnitError::NotWhole { .. })
        ));
        assert!(matches!(
            parse_percent_ppm("60"),
            Err(UnitError::MissingUnit { .. })
        ));
    }

    #[test]
    fn formatting_round_trips() {
        assert_eq!(format_duration(1_500_000), "1.5 ms");
        assert_eq!(format_duration(630), "630 ns");
        assert_eq!(format_duration(16_440), "16.44 us");
        assert_eq!(format_duration(1_000_000_000), "1 s");
        assert_eq!(format_duration(0), "0 s");
        assert_eq!(format_size(6_815_744), "6.5 MiB");
        assert_eq!(format_size(1_000_000), "1 MB");
        assert_eq!(format_size(4097), "4097 B");
        assert_eq!(format_bandwidth(6_000_000_000), "6 GB/s");
        assert_eq!(format_ppm(600_000), "60%");
        assert_eq!(format_ppm(1), "0.0001%");
        for v in [
            0,
            1,
            7,
            999,
            1_001,
            123_456_789,
            u64::MAX,
            u64::MAX - 1,
            1 << 40,
        ] {
            assert_eq!(parse_duration(&format_duration(v)), Ok(v));
            assert_eq!(parse_size(&format_size(v)), Ok(v));
            assert_eq!(parse_bandwidth(&format_bandwidth(v)), Ok(v));
            assert_eq!(parse_percent_ppm(&format_ppm(v)), Ok(v));
        }
    }
}
