//! What the engine works out from the numbers and the keys the model's function gave: the least
//! or the most, the different values, the total and the mean.

/// The record with the least (or, `most`, the most) value, and that value; ties go to the first.
/// `None` when fewer than two records gave a number.
pub(super) fn extreme(values: &[Option<f64>], most: bool) -> Option<(usize, f64)> {
    let numbers: Vec<(usize, f64)> = values.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i, v))).collect();
    if numbers.len() < 2 {
        return None;
    }
    numbers.into_iter().reduce(|a, b| if (most && b.1 > a.1) || (!most && b.1 < a.1) { b } else { a })
}

/// The different values of `keys` in the order first seen, and how many records gave one.
pub(super) fn distinct(keys: &[Option<String>]) -> (Vec<String>, usize) {
    let mut different: Vec<String> = Vec::new();
    for key in keys.iter().flatten() {
        if !different.contains(key) {
            different.push(key.clone());
        }
    }
    (different, keys.iter().flatten().count())
}

/// The mean of the numbers in `values` and how many there were; `None` when fewer than two
/// records gave one.
pub(super) fn average(values: &[Option<f64>]) -> Option<(f64, usize)> {
    let numbers: Vec<f64> = values.iter().flatten().copied().collect();
    (numbers.len() >= 2).then(|| (numbers.iter().sum::<f64>() / numbers.len() as f64, numbers.len()))
}

/// The sum of the numbers in `values`, rounded to cents against float noise (0.1 + 0.2), and
/// how many there were; `None` when fewer than two records gave one.
pub(super) fn total(values: &[Option<f64>]) -> Option<(f64, usize)> {
    let numbers: Vec<f64> = values.iter().flatten().copied().collect();
    (numbers.len() >= 2).then(|| ((numbers.iter().sum::<f64>() * 100.0).round() / 100.0, numbers.len()))
}
