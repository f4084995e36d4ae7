//! Calendar quotas against a real redis-server: the window of every decision is the calendar
//! period that holds its time in the limit's zone, as worked out independently here from the
//! time-zone library's own day, month and week starts (and, for hours, by walking the clock a
//! minute at a time), across daylight-saving changes from 2020 to 2030 in five zones; never more
//! than `limit` admitted in one window; `reset_after_ms` lands exactly on the local boundary; the
//! Redis clock decides even when the caller's is an hour off; in a policy the quota and a rate
//! limit charge all or nothing; settling charges the window what the actual cost would have.

use crate::common::{limiter, query, redis};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, ZonedDateTime};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use ratelockr::calendar::Calendar;
use ratelockr::rule::{Algorithm, AlgorithmKind};
use ratelockr::{At, Limit, Limiter, Period, Policy, Rule, TimeZoneName, WeekStart};

const ZONES: [&str; 5] = [
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "UTC",
];
/// 2020-01-01 and 2030-01-01, UTC.
const FROM_MS: i64 = 1_577_836_800_000;
const TO_MS: i64 = 1_893_456_000_000;

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn zdt(ms: i64, zone: &TimeZone) -> ZonedDateTime {
    Timestamp::from_millisecond(ms)
        .expect("an instant")
        .to_zoned_datetime(zone.clone())
}

fn millis(z: &ZonedDateTime) -> i64 {
    z.timestamp().as_millisecond()
}

/// The window holding `at_ms`, worked out without the engine: the library's start of the day,
/// of the month, of the week's first day, and the next one's; an hour by walking the local clock
/// a minute at a time to where its (date, hour) changes (every clock change of 2020-2030 falls
/// on a whole minute).
fn oracle(period: Period, zone: &str, week_start: WeekStart, at_ms: i64) -> (i64, i64) {
    let tz = TimeZone::get(zone).expect("a zone");
    let z = zdt(at_ms, &tz);
    let start_of = |z: ZonedDateTime| millis(&z.start_of_day().expect("a day"));
    match period {
        Period::Day => (start_of(z.clone()), start_of(z.tomorrow().expect("a day"))),
        Period::Month => (
            start_of(z.first_of_month().expect("a month")),
            start_of(
                z.last_of_month()
                    .expect("a month")
                    .tomorrow()
                    .expect("a day"),
            ),
        ),
        Period::Week => {
            let back = match week_start {
                WeekStart::Monday => z.weekday().to_monday_zero_offset(),
                WeekStart::Sunday => z.weekday().to_sunday_zero_offset(),
            };
            let first = z.checked_sub(i64::from(back).days()).expect("a week");
            let next = first.checked_add(7.days()).expect("a week");
            (start_of(first), start_of(next))
        }
        Period::Hour => {
            let hour_of = |ms: i64| {
                let dt = zdt(ms, &tz).datetime();
                (dt.date(), dt.hour())
            };
            let here = hour_of(at_ms);
            let mut start = at_ms - at_ms.rem_euclid(60_000);
            while hour_of(start - 60_000) == here {
                start -= 60_000;
            }
            let mut end = at_ms - at_ms.rem_euclid(60_000) + 60_000;
            while hour_of(end) == here {
                end += 60_000;
            }
            (start, end)
        }
    }
}

fn calendar(limit: u64, period: Period, zone: &str, week_start: WeekStart) -> Rule {
    Rule::new(
        "quota",
        Algorithm::Calendar {
            limit,
            period,
            time_zone: TimeZoneName::new(zone).expect("a zone"),
            week_start,
        },
    )
    .expect("valid")
}

/// The window a key stores: (start_ms, end_ms, count).
async fn stored(limiter: &Limiter, key: &str) -> Option<(i64, i64, u64)> {
    let bytes: Option<Vec<u8>> = query(limiter, redis::cmd("GET").arg(key)).await;
    let bytes = bytes?;
    let at = |i: usize| f64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    Some((at(0) as i64, at(1) as i64, at(2) as u64))
}

fn any_calendar() -> impl Strategy<Value = (Period, &'static str, WeekStart)> {
    (
        prop::sample::select(Period::ALL.to_vec()),
        prop::sample::select(ZONES.to_vec()),
        prop::sample::select(vec![WeekStart::Monday, WeekStart::Sunday]),
    )
}

#[test]
fn every_decision_counts_in_the_calendar_window_of_its_time_and_resets_on_its_boundary() {
    let server = redis();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let limiter = rt.block_on(async { limiter(&server, "cal-window") });
    // Random instants, and the last ms of their window and the first of the next: where an
    // off-by-one or a wrong offset would show.
    let strategy = (any_calendar(), FROM_MS..TO_MS, 0..3usize);
    let case = std::sync::atomic::AtomicU64::new(0);
    runner(160)
        .run(&strategy, |((period, zone, week_start), raw, edge)| {
            let case = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (_, raw_end) = oracle(period, zone, week_start, raw);
            let at = [raw, raw_end - 1, raw_end][edge];
            let (start, end) = oracle(period, zone, week_start, at);
            let rule = calendar(3, period, zone, week_start);
            let key = format!("k{case}");
            rt.block_on(async {
                let first = limiter
                    .try_check_at(&rule, &key, 1, At::Millis(at as u64))
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{e}")))?;
                let ctx = format!(
                    "{period} in {zone} at {at} ({:?})",
                    Timestamp::from_millisecond(at)
                );
                prop_assert!(first.allowed, "{ctx}: {first:?}");
                prop_assert_eq!(first.remaining, 2, "{}", ctx);
                prop_assert_eq!(first.reset_after_ms as i64, end - at, "{}", ctx);
                // On a caller's clock the key lives the window's length of real time: its
                // expiry never changes the answer to a given now_ms.
                let state = stored(&limiter, &limiter.keys().limiter(&rule, &key)).await;
                prop_assert_eq!(state, Some((start, end, 1)), "{}", ctx);
                let ttl: i64 = query(
                    &limiter,
                    redis::cmd("PTTL").arg(limiter.keys().limiter(&rule, &key)),
                )
                .await;
                prop_assert!(
                    ttl > end - start - 60_000 && ttl <= end - start,
                    "{}: PTTL {}",
                    ctx,
                    ttl
                );
                Ok(())
            })
        })
        .expect("each decision's window is the calendar's");
}

#[test]
fn never_more_than_the_limit_in_one_window_and_each_window_starts_afresh() {
    let server = redis();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let limiter = rt.block_on(async { limiter(&server, "cal-limit") });
    // A run of requests over about three windows of the period, from a random instant.
    let strategy = (any_calendar(), FROM_MS..TO_MS, 1..=4u64).prop_flat_map(
        |((period, zone, week_start), from, limit)| {
            let span = 3 * period.nominal_ms() as i64;
            (
                Just((period, zone, week_start, limit)),
                prop::collection::vec(from..from + span, 1..40),
            )
        },
    );
    let case = std::sync::atomic::AtomicU64::new(0);
    runner(48)
        .run(
            &strategy,
            |((period, zone, week_start, limit), mut times)| {
                let case = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                times.sort_unstable();
                let rule = calendar(limit, period, zone, week_start);
                let key = format!("k{case}");
                let mut per_window = std::collections::BTreeMap::<(i64, i64), (u64, u64)>::new();
                for &at in &times {
                    let decision = rt
                        .block_on(limiter.try_check_at(&rule, &key, 1, At::Millis(at as u64)))
                        .map_err(|e| TestCaseError::fail(format!("{e}")))?;
                    let window = oracle(period, zone, week_start, at);
                    let (sent, admitted) = per_window.entry(window).or_default();
                    *sent += 1;
                    *admitted += u64::from(decision.allowed);
                    if !decision.allowed {
                        // Denied until the window ends, to the ms.
                        prop_assert_eq!(decision.retry_after_ms as i64, window.1 - at);
                    }
                }
                for (window, (sent, admitted)) in per_window {
                    prop_assert_eq!(
                        admitted,
                        sent.min(limit),
                        "{} {} in {}: window {:?}",
                        limit,
                        period,
                        zone,
                        window
                    );
                }
                Ok(())
            },
        )
        .expect("the limit holds in every calendar window");
}

/// The Redis clock decides: windows worked out around a caller's clock an hour fast or slow
/// still hold Redis's time, and the script counts in Redis's window.
#[tokio::test]
async fn an_instance_whose_clock_is_an_hour_off_counts_in_the_window_of_redis_time() {
    let server = redis();
    let limiter = limiter(&server, "cal-skew");
    let calendar = Calendar {
        period: Period::Hour,
        time_zone: TimeZoneName::new("Australia/Lord_Howe").expect("a zone"),
        week_start: WeekStart::Monday,
    };
    let redis_now = |limiter: &Limiter| {
        let limiter = limiter.clone();
        async move {
            let (s, us): (i64, i64) = query(&limiter, &redis::cmd("TIME")).await;
            s * 1000 + us / 1000
        }
    };
    for (i, skew) in [-3_600_000i64, 3_600_000, -1, 0].into_iter().enumerate() {
        let key = format!("ratelockr-test:cal:skew{i}");
        loop {
            let before = redis_now(&limiter).await;
            let windows = calendar.windows_arg(before + skew);
            let reply: Vec<i64> = query(
                &limiter,
                redis::cmd("EVAL")
                    .arg(ratelockr::scripts::source(AlgorithmKind::Calendar))
                    .arg(1)
                    .arg(&key)
                    .arg(5)
                    .arg(&*windows)
                    .arg(""),
            )
            .await;
            let after = redis_now(&limiter).await;
            let window = calendar.window_at(before);
            if window != calendar.window_at(after) {
                // The hour turned during the call: ask again.
                query::<i64>(&limiter, redis::cmd("DEL").arg(&key)).await;
                continue;
            }
            assert_eq!(reply[0..2], [1, 4], "skew {skew}: {reply:?}");
            assert_eq!(
                stored(&limiter, &key).await.map(|s| (s.0, s.1)),
                Some(window)
            );
            let reset = reply[3];
            assert!(
                (window.1 - after..=window.1 - before).contains(&reset),
                "skew {skew}: reset {reset} not until {window:?} from [{before}, {after}]"
            );
            break;
        }
    }
}

#[tokio::test]
async fn a_time_outside_the_windows_sent_is_refused_by_the_script_naming_it() {
    let server = redis();
    let limiter = limiter(&server, "cal-outside");
    let err = ratelockr_query_error(
        &limiter,
        redis::cmd("EVAL")
            .arg(ratelockr::scripts::source(AlgorithmKind::Calendar))
            .arg(1)
            .arg("ratelockr-test:cal:outside")
            .arg(5)
            .arg("1000,2000,3000")
            .arg(5000),
    )
    .await;
    assert!(
        err.contains("5000") && err.contains("outside the windows"),
        "{err}"
    );
}

async fn ratelockr_query_error(limiter: &Limiter, cmd: &redis::Cmd) -> String {
    let mut conn = limiter.connection();
    match cmd.query_async::<redis::Value>(&mut conn).await {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn an_unknown_zone_is_refused_by_name_in_a_policies_file() {
    let text = r#"
[[policies]]
name = "api"
key = "header:x-api-key"
  [[policies.limits]]
  name = "daily"
  algorithm = "calendar"
  limit = 2000
  period = "day"
  time_zone = "Europe/Berln"
"#;
    let err = ratelockr::policy::file::parse_policies(text, ratelockr::policy::file::Format::Toml)
        .expect_err("no such zone");
    let shown = err.to_string();
    assert!(
        shown.contains("Europe/Berln") && shown.contains("time_zone"),
        "{shown}"
    );
    let fine = text.replace("Europe/Berln", "Europe/Berlin");
    let policies =
        ratelockr::policy::file::parse_policies(&fine, ratelockr::policy::file::Format::Toml)
            .expect("a known zone");
    assert!(matches!(
        policies[0].limits()[0].algorithm(),
        Algorithm::Calendar { period: Period::Day, time_zone, .. } if time_zone.as_str() == "Europe/Berlin"
    ));
}

/// A daily quota of 3 and a bucket of 2 (refilling one token in 1,000 s) in one policy: a
/// request one limit denies charges the other nothing.
#[tokio::test]
async fn in_a_policy_the_quota_and_a_rate_limit_charge_all_or_nothing() {
    let server = redis();
    let limiter = limiter(&server, "cal-policy");
    let quota = Limit::new(
        "daily",
        Algorithm::Calendar {
            limit: 3,
            period: Period::Day,
            time_zone: TimeZoneName::new("America/New_York").expect("a zone"),
            week_start: WeekStart::Monday,
        },
    )
    .expect("valid");
    let bucket = Limit::new(
        "burst",
        Algorithm::TokenBucket {
            capacity: 2,
            refill_per_sec: 0.001,
        },
    )
    .expect("valid");
    let policy = Policy::new("api", vec![quota, bucket]).expect("valid");
    let t = 1_800_000_000_000u64;
    let at = |ms| At::Millis(t + ms);
    let decide = |ms| limiter.try_check_policy_at(&policy, "alice", 1, at(ms));
    assert!(decide(0).await.expect("redis").allowed);
    assert!(decide(1).await.expect("redis").allowed);
    // The bucket is empty: denied, and the day's count stays 2.
    let third = decide(2).await.expect("redis");
    assert!(!third.allowed, "{third:?}");
    let quota_key = limiter
        .keys()
        .policy_limit(AlgorithmKind::Calendar, "api", "daily", "alice");
    assert_eq!(stored(&limiter, &quota_key).await.map(|s| s.2), Some(2));
    // 1,100 s later the bucket holds a token again: the quota's third; then the quota denies
    // with the bucket full enough, which keeps its token.
    assert!(decide(1_100_000).await.expect("redis").allowed);
    let bucket_key =
        limiter
            .keys()
            .policy_limit(AlgorithmKind::TokenBucket, "api", "burst", "alice");
    let bucket_before: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&bucket_key)).await;
    let fifth = decide(3_000_000).await.expect("redis");
    assert!(!fifth.allowed, "{fifth:?}");
    let (_, end) = oracle(
        Period::Day,
        "America/New_York",
        WeekStart::Monday,
        (t + 3_000_000) as i64,
    );
    assert_eq!(
        fifth.retry_after_ms as i64,
        end - (t + 3_000_000) as i64,
        "{fifth:?}"
    );
    assert!(
        fifth.limits()[1].allowed,
        "the bucket would admit: {fifth:?}"
    );
    let bucket_after: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&bucket_key)).await;
    assert_eq!(
        bucket_before, bucket_after,
        "the quota's denial left the bucket as it was"
    );
}

#[tokio::test]
async fn settling_charges_the_window_what_the_actual_cost_would_have() {
    let server = redis();
    let limiter = limiter(&server, "cal-settle");
    let quota = Limit::new(
        "tokens",
        Algorithm::Calendar {
            limit: 1_000_000,
            period: Period::Month,
            time_zone: TimeZoneName::new("Asia/Kolkata").expect("a zone"),
            week_start: WeekStart::Monday,
        },
    )
    .expect("valid");
    let policy = Policy::new("llm", vec![quota]).expect("valid");
    let at = At::Millis(1_800_000_000_000);
    let decision = limiter
        .try_check_policy_at(&policy, "team", 1_000, at)
        .await
        .expect("redis");
    assert!(decision.allowed);
    assert!(limiter
        .settle_at(&policy, "team", 1_000, 640, at)
        .await
        .expect("settled"));
    let key = limiter
        .keys()
        .policy_limit(AlgorithmKind::Calendar, "llm", "tokens", "team");
    assert_eq!(stored(&limiter, &key).await.map(|s| s.2), Some(640));
    assert!(limiter
        .settle_at(&policy, "team", 640, 1_500, at)
        .await
        .expect("settled"));
    assert_eq!(stored(&limiter, &key).await.map(|s| s.2), Some(1_500));
}

/// `RateLimit-Policy`'s `w` is the window's real length: a UTC day is always 86,400 s, a
/// Berlin day 23, 24 or 25 hours.
#[test]
fn the_header_window_is_the_current_windows_real_length() {
    let day = |zone: &str| Algorithm::Calendar {
        limit: 2000,
        period: Period::Day,
        time_zone: TimeZoneName::new(zone).expect("a zone"),
        week_start: WeekStart::Monday,
    };
    assert_eq!(ratelockr::headers::policy(&day("UTC")), (2000, 86_400));
    assert_eq!(
        ratelockr::headers::policy_params(&day("UTC")),
        "q=2000;w=86400"
    );
    let (_, berlin) = ratelockr::headers::policy(&day("Europe/Berlin"));
    assert!([82_800, 86_400, 90_000].contains(&berlin), "{berlin}");
}

/// A caller's time past the dates the time-zone library holds (years up to 9999) is the
/// caller's mistake, named as such, for a rule and a policy, never worked out (nor a hang).
#[tokio::test]
async fn a_time_past_year_9999_is_refused_naming_now_ms() {
    let server = redis();
    let limiter = limiter(&server, "cal-far");
    let rule = calendar(5, Period::Month, "Europe/Berlin", WeekStart::Monday);
    let far = At::Millis(ratelockr::scripts::MAX_NOW_MS);
    let err = limiter
        .try_check_at(&rule, "k", 1, far)
        .await
        .expect_err("past 9999");
    assert!(err.to_string().contains("now_ms"), "{err}");
    let policy = Policy::new(
        "p",
        vec![Limit::new("monthly", *rule.algorithm()).expect("valid")],
    )
    .expect("valid");
    let err = limiter
        .try_check_policy_at(&policy, "k", 1, far)
        .await
        .expect_err("past 9999");
    assert!(err.to_string().contains("now_ms"), "{err}");
    // The last time it decides still works.
    let last = At::Millis(ratelockr::calendar::LATEST_MS as u64);
    assert!(
        limiter
            .try_check_at(&rule, "k", 1, last)
            .await
            .expect("decided")
            .allowed
    );
}
