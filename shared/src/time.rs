//! Times as a reader wants them: ages ("3 min ago") and clock times ("10:42 UTC") of the RFC 3339
//! timestamps the server sends.
//!
//! The current time is passed in, never read, so these are plain functions tested natively and behave the
//! same in the wasm app.

/// Seconds since the Unix epoch of an RFC 3339 timestamp (`2024-05-01T10:42:00Z`, fractions and offsets
/// allowed), or `None` when it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return None;
    }
    let digits = |from: usize, to: usize| -> Option<i64> {
        let part = text.get(from..to)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let year = digits(0, 4)?;
    let month = digits(5, 7)?;
    let day = digits(8, 10)?;
    let hour = digits(11, 13)?;
    let minute = digits(14, 16)?;
    let second = digits(17, 19)?;
    if bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        rest = &fraction[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let hours: i64 = rest[1..3].parse().ok()?;
            let minutes: i64 = rest[4..6].parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// How long ago `at` was as of `now`, both RFC 3339: "just now", "40 s ago", "2 min ago", "3 h ago",
/// "5 d ago". A time slightly in the future (clock skew) reads "just now". `None` when either is not a time.
pub fn age(at: &str, now: &str) -> Option<String> {
    let seconds = parse_rfc3339(now)? - parse_rfc3339(at)?;
    Some(match seconds {
        ..=9 => "just now".to_string(),
        10..=59 => format!("{seconds} s ago"),
        60..=3_599 => format!("{} min ago", seconds / 60),
        3_600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    })
}

/// [`age`], or the raw text when it cannot be read as a time (never hide what the server said).
pub fn age_or_raw(at: &str, now: &str) -> String {
    age(at, now).unwrap_or_else(|| at.to_string())
}

/// A moment as a reader wants it next to "since": "10:42 UTC" on the same UTC day as `now`, otherwise
/// "2024-05-01 10:42 UTC". `None` when `at` is not a time.
pub fn clock(at: &str, now: &str) -> Option<String> {
    let seconds = parse_rfc3339(at)?;
    let day = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let hh_mm = format!("{:02}:{:02} UTC", in_day / 3600, (in_day % 3600) / 60);
    let same_day = parse_rfc3339(now).is_some_and(|now| now.div_euclid(86_400) == day);
    if same_day {
        Some(hh_mm)
    } else {
        let (y, m, d) = civil_from_days(day);
        Some(format!("{y:04}-{m:02}-{d:02} {hh_mm}"))
    }
}

/// "since 10:42 UTC (12 min ago)", the way an unreachable cluster or a stale value is dated.
pub fn since(at: &str, now: &str) -> String {
    match (clock(at, now), age(at, now)) {
        (Some(clock), Some(age)) => format!("since {clock} ({age})"),
        _ => format!("since {at}"),
    }
}

/// The date `(year, month, day)` of a day number since 1970-01-01 (inverse of [`days_from_civil`]).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// How long something took, as a reader says it: "45 s", "3 min 12 s", "1 h 4 min". Negative reads as 0 s.
pub fn duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        ..=59 => format!("{seconds} s"),
        60..=3_599 => format!("{} min {} s", seconds / 60, seconds % 60),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_two_largest_units() {
        assert_eq!(duration(-3), "0 s");
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(192), "3 min 12 s");
        assert_eq!(duration(3_840), "1 h 4 min");
    }

    const NOW: &str = "2024-05-01T10:54:00Z";

    #[test]
    fn timestamps_read_with_fractions_and_offsets() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-05-01T10:42:00Z"), Some(1_714_560_120));
        assert_eq!(
            parse_rfc3339("2024-05-01T10:42:00.123Z"),
            Some(1_714_560_120)
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T12:42:00+02:00"),
            Some(1_714_560_120)
        );
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Some(1_709_164_800));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2024-05-01T10:42:00"), None);
        assert_eq!(parse_rfc3339("2024-13-01T10:42:00Z"), None);
    }

    #[test]
    fn ages_read_as_a_person_would_say_them() {
        let age = |at: &str| age(at, NOW);
        assert_eq!(age("2024-05-01T10:53:58Z").as_deref(), Some("just now"));
        assert_eq!(age("2024-05-01T10:53:20Z").as_deref(), Some("40 s ago"));
        assert_eq!(age("2024-05-01T10:52:00Z").as_deref(), Some("2 min ago"));
        assert_eq!(age("2024-05-01T07:50:00Z").as_deref(), Some("3 h ago"));
        assert_eq!(age("2024-04-26T10:54:00Z").as_deref(), Some("5 d ago"));
        // A server clock slightly ahead of the browser's is not "in the future".
        assert_eq!(age("2024-05-01T10:54:30Z").as_deref(), Some("just now"));
        assert_eq!(age("garbage"), None);
        assert_eq!(age_or_raw("garbage", NOW), "garbage");
    }

    #[test]
    fn since_names_the_clock_time_and_the_age() {
        assert_eq!(
            since("2024-05-01T10:42:00Z", NOW),
            "since 10:42 UTC (12 min ago)"
        );
        assert_eq!(
            since("2024-04-30T23:05:00Z", NOW),
            "since 2024-04-30 23:05 UTC (11 h ago)"
        );
        assert_eq!(since("soon", NOW), "since soon");
        assert_eq!(civil_from_days(days_from_civil(2000, 2, 29)), (2000, 2, 29));
    }
}
