//! A count written in digits or words, for the time windows tasks name (`window.rs`,
//! `select/dates.rs`).

/// A count written in digits or words (English or Chinese).
pub(super) fn number(word: &str) -> Option<u32> {
    const WORDS: [(&str, u32); 29] = [
        ("a", 1),
        ("an", 1),
        ("one", 1),
        ("two", 2),
        ("three", 3),
        ("four", 4),
        ("five", 5),
        ("six", 6),
        ("seven", 7),
        ("eight", 8),
        ("nine", 9),
        ("ten", 10),
        ("twelve", 12),
        ("fourteen", 14),
        ("thirty", 30),
        ("ninety", 90),
        ("一", 1),
        ("两", 2),
        ("二", 2),
        ("三", 3),
        ("四", 4),
        ("五", 5),
        ("六", 6),
        ("七", 7),
        ("八", 8),
        ("九", 9),
        ("十", 10),
        ("十四", 14),
        ("二十四", 24),
    ];
    word.parse().ok().or_else(|| WORDS.iter().find(|(w, _)| *w == word).map(|(_, n)| *n)).filter(|n| *n > 0)
}
