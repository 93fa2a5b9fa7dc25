//! PNG pictures in and out of `gpurtl run` (`--image`, `--output-image`):
//! 8-bit grey or RGBA in memory, read from any 8-bit PNG colour type.

use crate::error::{Error, Result};
use std::path::Path;

/// An 8-bit picture: `channels` bytes a pixel (1 grey, 4 RGBA), row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Vec<u8>,
}

impl Image {
    /// Pixel (x, y)'s bytes.
    pub fn pixel(&self, x: u32, y: u32) -> &[u8] {
        let c = self.channels as usize;
        let i = (y as usize * self.width as usize + x as usize) * c;
        &self.data[i..i + c]
    }
}

/// The largest picture side `--image` reads (a texture level's largest size).
pub const MAX_SIDE: u32 = 4096;

/// The largest PNG file `--image` reads: 64 MiB (a 4096 x 4096 RGBA
/// picture, stored uncompressed).
pub const MAX_PNG_BYTES: u64 = 64 << 20;

/// Read `path` as an 8-bit PNG: grey stays grey; grey with alpha, RGB,
/// RGBA and palette pictures become RGBA (alpha 255 where there is none).
/// `option` names the command-line option in messages.
pub fn read_png(option: &str, path: &Path) -> Result<Image> {
    let what = format!("option `{option}` = `{}`", path.display());
    let bytes = gpurtl_sim::files::read_limited(path, MAX_PNG_BYTES).map_err(|e| match e {
        gpurtl_sim::files::ReadError::Io(e) => Error::Bad(format!("{what}: cannot open it: {e}")),
        e => Error::Bad(format!("{what}: {}", e.reason(MAX_PNG_BYTES))),
    })?;
    decode_png(&what, bytes)
}

/// Why the decoder refused a file, in words: the decoder's message with its
/// chunk types shown by name (`IHDR`), not as the Rust structures it prints.
fn png_reason(e: &png::DecodingError) -> String {
    let mut s = e.to_string();
    while let Some(at) = s.find("ChunkType {") {
        let rest = &s[at..];
        let Some(end) = rest.find('}') else { break };
        let name = rest.split("type: ").nth(1).and_then(|t| t.split([',', ' ', '}']).next()).unwrap_or("?");
        let name = format!("`{name}`");
        s.replace_range(at..at + end + 1, &name);
    }
    let s = s.trim_end_matches('.').to_string();
    if s.is_empty() {
        "the decoder refused it".into()
    } else {
        s
    }
}

/// A palette chunk (`PLTE`) of a length the decoder does not check (png
/// 0.17.16 panics on one that is not whole RGB entries): the message.
fn bad_palette(bytes: &[u8]) -> Option<String> {
    let mut i = 8;
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return None;
    }
    while i + 8 <= bytes.len() {
        let n = u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
        if &bytes[i + 4..i + 8] == b"PLTE" && (!n.is_multiple_of(3) || n == 0 || n > 768) {
            return Some(format!("its palette (chunk `PLTE`) is {n} bytes; must be 1 to 256 RGB entries of 3 bytes each"));
        }
        i = i.saturating_add(12).saturating_add(n);
    }
    None
}

/// [`read_png`] of a file's bytes; `what` names the file in messages
/// ("option `--image` = `a.png`").
pub fn decode_png(what: &str, bytes: Vec<u8>) -> Result<Image> {
    if let Some(m) = bad_palette(&bytes) {
        return Err(Error::Bad(format!("{what}: not a readable PNG file: {m}")));
    }
    let bad = |e: png::DecodingError| Error::Bad(format!("{what}: not a readable PNG file: {}; must be an 8-bit PNG", png_reason(&e)));
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(bad)?;
    // Refused before decoding: no block takes a picture larger than this.
    let (w, h) = (reader.info().width, reader.info().height);
    if w > MAX_SIDE || h > MAX_SIDE || w == 0 || h == 0 {
        return Err(Error::Bad(format!("{what}: the picture is {w}x{h} pixels; must be 1 to {MAX_SIDE} on each side")));
    }
    let depth = reader.info().bit_depth;
    if depth != png::BitDepth::Eight && reader.info().color_type != png::ColorType::Indexed {
        return Err(Error::Bad(format!(
            "{what}: has {}-bit samples; must be an 8-bit PNG (grey, grey+alpha, RGB, RGBA or palette)",
            depth as u8
        )));
    }
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).map_err(bad)?;
    if frame.bit_depth != png::BitDepth::Eight {
        return Err(Error::Bad(format!(
            "{what}: has {:?}-bit samples; must be an 8-bit PNG (grey, grey+alpha, RGB, RGBA or palette)",
            frame.bit_depth as u8
        )));
    }
    let (w, h) = (frame.width, frame.height);
    let src = &buf[..frame.buffer_size()];
    let n = (w * h) as usize;
    let (channels, data) = match frame.color_type {
        png::ColorType::Grayscale => (1, src.to_vec()),
        png::ColorType::GrayscaleAlpha => (4, (0..n).flat_map(|i| [src[2 * i], src[2 * i], src[2 * i], src[2 * i + 1]]).collect()),
        png::ColorType::Rgb => (4, (0..n).flat_map(|i| [src[3 * i], src[3 * i + 1], src[3 * i + 2], 255]).collect()),
        png::ColorType::Rgba => (4, src.to_vec()),
        // EXPAND turns palettes into RGB or RGBA; a decoder that did not is refused.
        png::ColorType::Indexed => {
            return Err(Error::Bad(format!("{what}: a palette PNG the decoder did not expand")))
        }
    };
    Ok(Image { width: w, height: h, channels, data })
}

/// Write `img` to `path` as a PNG, atomically (a temporary file, renamed);
/// `option` names the command-line option in messages.
pub fn write_png(option: &str, path: &Path, img: &Image) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, img.width, img.height);
        enc.set_color(if img.channels == 1 { png::ColorType::Grayscale } else { png::ColorType::Rgba });
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(|e| Error::Failed(format!("PNG encoding: {e}")))?;
        w.write_image_data(&img.data).map_err(|e| Error::Failed(format!("PNG encoding: {e}")))?;
    }
    crate::emit::write_atomic(path, &bytes).map_err(|e| crate::emit::output_error(option, path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_and_rgb_round_trip_through_png() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.png");
        let grey = Image { width: 3, height: 2, channels: 1, data: vec![0, 1, 2, 250, 251, 255] };
        write_png("--output-image", &p, &grey).unwrap();
        assert_eq!(read_png("--image", &p).unwrap(), grey);
        let rgba = Image { width: 2, height: 1, channels: 4, data: vec![1, 2, 3, 4, 5, 6, 7, 8] };
        write_png("--output-image", &p, &rgba).unwrap();
        assert_eq!(read_png("--image", &p).unwrap(), rgba);
    }

    #[test]
    fn a_file_that_is_not_a_png_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.png");
        std::fs::write(&p, b"not a png").unwrap();
        let e = read_png("--image", &p).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(e.message().contains("option `--image`") && e.message().contains("not a readable PNG"), "{e}");
        // A palette of 28 bytes (9 entries and a byte): the decoder would panic.
        let crc = |b: &[u8]| {
            let mut c = !0u32;
            for x in b {
                c ^= *x as u32;
                for _ in 0..8 {
                    c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
                }
            }
            !c
        };
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [(&b"IHDR"[..], &[0, 0, 0, 2, 0, 0, 0, 1, 8, 3, 0, 0, 0][..]), (b"PLTE", &[7; 28]), (b"IDAT", &[0x78, 1, 1, 3, 0, 0xfc, 0xff, 0, 0, 0, 0, 3, 0, 1])] {
            png.extend((data.len() as u32).to_be_bytes());
            let body = [kind, data].concat();
            png.extend(&body);
            png.extend(crc(&body).to_be_bytes());
        }
        let e = decode_png("option `--image` = `p.png`", png).unwrap_err();
        assert_eq!(
            e.message(),
            "option `--image` = `p.png`: not a readable PNG file: its palette (chunk `PLTE`) is 28 bytes; must be 1 to 256 RGB entries of 3 bytes each"
        );
        let e = read_png("--image", &dir.path().join("missing.png")).unwrap_err();
        assert!(e.message().contains("cannot open"), "{e}");
    }
}
