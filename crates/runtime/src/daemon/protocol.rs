//! The daemon's wire protocol: the fixed 32-byte messages clients and the
//! daemon exchange on the socket (request and reply codes, refusal codes
//! and their texts, the protocol version), their encoding and decoding, and
//! the encodings of engines and token grants inside them. Grants travel
//! through shared memory instead ([`super::shared`]).

use crate::arbiter::Engine;

pub(super) const MSG: usize = 32;

// Requests.
pub(super) const REGISTER: u32 = 1;
pub(super) const TOKEN: u32 = 2;
pub(super) const TOKEN_RELEASE: u32 = 3;
pub(super) const LOCK: u32 = 4;
pub(super) const LOCK_RELEASE: u32 = 5;
// Replies (on the socket: only the registration; grants and refusals of
// requests go through shared memory).
pub(super) const REGISTERED: u32 = 101;
pub(super) const REFUSED: u32 = 199;

/// Protocol version, sent with the registration: a daemon and a client of
/// different versions refuse each other with a clear error instead of
/// waiting for replies the other never sends.
pub(super) const PROTOCOL: u64 = 2;

// Refusal codes.
pub(super) const ALREADY_TOKEN: u32 = 1;
pub(super) const NO_TOKEN: u32 = 2;
pub(super) const NO_ENGINE: u32 = 3;
pub(super) const MALFORMED: u32 = 4;
pub(super) const FULL: u32 = 5;
pub(super) const VERSION: u32 = 6;
pub(super) const BAD_THREAD: u32 = 7;

pub(super) fn refusal_text(code: u32) -> &'static str {
    match code {
        ALREADY_TOKEN => "this client already holds or waits for a token",
        NO_TOKEN => "an engine lock needs a held token",
        NO_ENGINE => "no such GPU or engine",
        FULL => "the daemon serves its maximum number of clients",
        VERSION => "the daemon speaks another protocol version (rtgpu versions differ)",
        BAD_THREAD => "the thread id sent is not a thread of the connecting process",
        _ => "malformed request",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Msg {
    pub(super) op: u32,
    pub(super) a: u32,
    pub(super) b: u64,
    pub(super) c: u64,
    pub(super) d: u64,
}

impl Msg {
    pub(super) fn new(op: u32, a: u32, b: u64, c: u64, d: u64) -> Msg {
        Msg { op, a, b, c, d }
    }

    pub(super) fn encode(&self) -> [u8; MSG] {
        let mut m = [0u8; MSG];
        m[0..4].copy_from_slice(&self.op.to_le_bytes());
        m[4..8].copy_from_slice(&self.a.to_le_bytes());
        m[8..16].copy_from_slice(&self.b.to_le_bytes());
        m[16..24].copy_from_slice(&self.c.to_le_bytes());
        m[24..32].copy_from_slice(&self.d.to_le_bytes());
        m
    }

    pub(super) fn decode(m: &[u8; MSG]) -> Msg {
        let u32_at = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&m[i..i + 8]);
            u64::from_le_bytes(b)
        };
        Msg {
            op: u32_at(0),
            a: u32_at(4),
            b: u64_at(8),
            c: u64_at(16),
            d: u64_at(24),
        }
    }
}

pub(super) fn engine_code(e: Engine) -> u64 {
    match e {
        Engine::Exec => 0,
        Engine::CopyIn => 1,
        Engine::CopyOut => 2,
    }
}

pub(super) fn engine_of(code: u64) -> Option<Engine> {
    match code {
        0 => Some(Engine::Exec),
        1 => Some(Engine::CopyIn),
        2 => Some(Engine::CopyOut),
        _ => None,
    }
}

/// A token grant's payload: its GPU and token index.
pub(super) fn token_payload(gpu: usize, token: usize) -> u32 {
    ((gpu as u32 & 0x7fff) << 16) | (token as u32 & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let m = Msg::new(LOCK, 2, u64::MAX, 7, 1 << 40);
        assert_eq!(Msg::decode(&m.encode()), m);
    }

    /// The decoder is total: any 32 bytes decode, and encode back to the
    /// same bytes (fixed seed; `RTGPU_FUZZ_ROUNDS` × 100 inputs).
    #[test]
    fn any_bytes_decode_and_round_trip() {
        let n: u64 = std::env::var("RTGPU_FUZZ_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300)
            * 100;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..n {
            let mut b = [0u8; MSG];
            for byte in &mut b {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            assert_eq!(Msg::decode(&b).encode(), b);
            let _ = refusal_text(Msg::decode(&b).a);
            let _ = engine_of(Msg::decode(&b).b);
        }
    }
}
