//! Tests of the tfevents reader: both scalar encodings, half-written tails, bad records.
use super::encode::{self, Style};
use super::*;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn file_with(style: Style, n: i64) -> Vec<u8> {
    let mut out = Vec::new();
    encode::record(&mut out, &encode::file_version_event(1.0));
    for i in 1..=n {
        encode::record(
            &mut out,
            &encode::scalar_event(i, 100.0 + i as f64, b"train/loss", 10.0 / i as f64, style),
        );
        if i % 5 == 0 {
            encode::record(
                &mut out,
                &encode::scalar_event(i, 100.0 + i as f64, b"eval/loss", 0.5, style),
            );
        }
    }
    out
}

#[test]
fn reads_both_scalar_encodings() {
    let dir = tempfile::tempdir().unwrap();
    for style in [
        Style::SimpleValue,
        Style::TensorFloatVal,
        Style::TensorContentF64,
    ] {
        let p = write(
            dir.path(),
            "events.out.tfevents.1.host",
            &file_with(style, 20),
        );
        let f = read_events(&p).unwrap();
        assert_eq!(f.records, 1 + 20 + 4);
        assert!(f.tail.is_none());
        let loss = f.series.iter().find(|s| s.tag == "train/loss").unwrap();
        assert_eq!(loss.name, "loss");
        assert_eq!(loss.len(), 20);
        assert_eq!(loss.first().unwrap().step, 1);
        assert_eq!(loss.first().unwrap().value, 10.0);
        assert_eq!(loss.first().unwrap().wall_time, Some(101.0));
        assert!((loss.last().unwrap().value - 0.5).abs() < 1e-6, "{style:?}");
        let eval = f.series.iter().find(|s| s.name == "eval_loss").unwrap();
        assert_eq!(eval.steps(), vec![5, 10, 15, 20]);
    }
}

#[test]
fn half_written_tail_is_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let full = file_with(Style::SimpleValue, 10);
    for cut in [1, 5, 12, 13, 20] {
        let p = write(
            dir.path(),
            "events.out.tfevents.cut",
            full.get(..full.len() - cut).unwrap(),
        );
        let f = read_events(&p).unwrap();
        let loss = f.series.iter().find(|s| s.tag == "train/loss").unwrap();
        assert!(loss.len() >= 9, "cut {cut}: {}", loss.len());
        assert!(f.tail.is_some(), "cut {cut}");
    }
}

#[test]
fn bad_crc_in_the_middle_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = file_with(Style::SimpleValue, 10);
    let second = {
        let first_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        12 + first_len + 4
    };
    bytes[second + 14] ^= 0xff; // inside the second record's data
    let p = write(dir.path(), "events.out.tfevents.bad", &bytes);
    let e = read(&p).unwrap_err().to_string();
    assert!(e.contains("events.out.tfevents.bad"), "{e}");
    assert!(e.contains(&format!("byte {second}")), "{e}");
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn huge_length_field_is_never_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = file_with(Style::SimpleValue, 3);
    let len = (1u64 << 63).to_le_bytes();
    bytes.extend_from_slice(&len);
    bytes.extend_from_slice(&masked_crc(&len).to_le_bytes());
    bytes.extend_from_slice(b"junk");
    let p = write(dir.path(), "events.out.tfevents.huge", &bytes);
    let f = read_events(&p).unwrap();
    assert_eq!(
        f.series
            .iter()
            .find(|s| s.tag == "train/loss")
            .unwrap()
            .len(),
        3
    );
    assert!(f.tail.unwrap().contains("half-written"));
}

#[test]
fn non_scalar_plugins_are_ignored_and_metadata_is_remembered_per_tag() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    // A "text" plugin tensor with one element: must not become a series.
    let mut ev = encode::scalar_event(1, 1.0, b"notes", 1.0, Style::TensorFloatVal);
    let pos = ev.windows(7).position(|w| w == b"scalars").unwrap();
    ev.splice(pos..pos + 7, b"texts!!".iter().copied());
    encode::record(&mut out, &ev);
    encode::record(
        &mut out,
        &encode::scalar_event(2, 1.0, b"notes", 2.0, Style::TensorFloatVal),
    );
    let p = write(dir.path(), "events.out.tfevents.plugins", &out);
    let f = read_events(&p).unwrap();
    // The second event re-declares "scalars": from then on the tag is a scalar.
    let notes = f.series.iter().find(|s| s.tag == "notes").unwrap();
    assert_eq!(notes.steps(), vec![2]);
}

#[test]
fn garbage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let base = file_with(Style::TensorFloatVal, 4);
    for i in 0..300 {
        let mut bytes = base.clone();
        for _ in 0..(1 + i % 7) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed as usize) % bytes.len();
            bytes[at] = (seed >> 32) as u8;
        }
        let p = write(dir.path(), "events.out.tfevents.fuzz", &bytes);
        let _ = read_events(&p);
        // Garbage inside a record with a valid CRC: decode directly.
        let mut d = Decoder::new(&p);
        d.event(&bytes[12..]);
        let _ = tensor_scalar(&bytes[20..]);
    }
    let e = read(&write(
        dir.path(),
        "events.out.tfevents.text",
        b"hello world, not an event file",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("byte 0"));
    assert!(read(&write(dir.path(), "events.out.tfevents.empty", b""))
        .unwrap()
        .is_empty());
}

#[test]
fn invalid_utf8_tags_are_read_lossily() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    encode::record(
        &mut out,
        &encode::scalar_event(1, 1.0, b"loss\xff", 1.0, Style::SimpleValue),
    );
    let p = write(dir.path(), "events.out.tfevents.utf8", &out);
    let s = read(&p).unwrap();
    assert_eq!(s[0].tag, "loss\u{fffd}");
}
