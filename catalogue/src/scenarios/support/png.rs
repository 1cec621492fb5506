//! A minimal PNG encoder for test images (one RGBA pixel) and the base64 text of a data
//! URL, so image scenarios need no image crate.

use std::io::Write;

use flate2::Crc;
use flate2::write::ZlibEncoder;

/// The 8-byte PNG signature.
const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// A valid 1×1 RGBA PNG of the colour `rgba`.
pub fn one_pixel(rgba: [u8; 4]) -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    // Width 1, height 1, bit depth 8, colour type 6 (RGBA), compression 0, filter 0,
    // no interlace.
    let header = [0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0];
    chunk(&mut out, b"IHDR", &header);
    // One scanline: filter byte 0 then the pixel.
    let raw = [0, rgba[0], rgba[1], rgba[2], rgba[3]];
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = z.write_all(&raw);
    let data = z.finish().unwrap_or_default();
    chunk(&mut out, b"IDAT", &data);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends one chunk: length, type, data, CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Walks the chunks, checking every CRC, and returns (type, data) pairs.
    fn chunks(png: &[u8]) -> Vec<(String, Vec<u8>)> {
        assert_eq!(&png[..8], &SIGNATURE);
        let mut at = 8;
        let mut out = Vec::new();
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind = &png[at + 4..at + 8];
            let data = &png[at + 8..at + 8 + len];
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            let mut want = Crc::new();
            want.update(kind);
            want.update(data);
            assert_eq!(crc, want.sum(), "CRC of {}", String::from_utf8_lossy(kind));
            out.push((String::from_utf8_lossy(kind).into_owned(), data.to_vec()));
            at += 12 + len;
        }
        out
    }

    #[test]
    fn one_pixel_is_a_well_formed_png() {
        let png = one_pixel([1, 2, 3, 4]);
        let chunks = chunks(&png);
        let kinds: Vec<&str> = chunks.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
        assert_eq!(chunks[0].1, [0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&chunks[1].1[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_crc_is_the_png_crc() {
        // The IEND chunk's CRC is fixed by the PNG specification.
        let mut crc = Crc::new();
        crc.update(b"IEND");
        assert_eq!(crc.sum(), 0xAE42_6082);
    }
}
