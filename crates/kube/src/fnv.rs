//! FNV-1a, the one stable 64-bit hash of ork's: the same bytes give the same value in every run
//! and on every machine (shards are assigned with it, applied children are marked with it).

/// FNV-1a over a byte stream. [`Fnv::str`] prefixes a string with its length, so that no two
/// contents run together into the same bytes.
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(&(s.len() as u64).to_le_bytes());
        self.bytes(s.as_bytes());
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}
