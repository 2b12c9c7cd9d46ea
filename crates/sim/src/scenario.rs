//! Seed 004's scenario shorthand (§5): "the letter A (a) denotes affinity
//! was enabled (disabled); E (e) denotes that engine locks were (not) used;
//! D (d) denotes that DGLs were (not) used; G (g) denotes that migrations
//! were performed via GPU-to-GPU (system) memory copies. Finally, each
//! scenario designation is followed by a chunk size (X denotes that
//! chunking was disabled)", e.g. `AEDg,2MB` or `aedg,X`.

use rtgpu_model::{GpuAllocator, PeerLocking, Policy};

use crate::SimConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub affinity: bool,
    pub engine_locks: bool,
    pub dgl: bool,
    pub peer: bool,
    /// Chunk size in bytes, None = unchunked.
    pub chunk: Option<u64>,
}

impl Scenario {
    /// Parse `AEDG,2MB` style names (MB here is MiB, as the paper's 2MB
    /// chunks are powers of two).
    pub fn parse(s: &str) -> Result<Scenario, String> {
        let (flags, chunk) = s
            .split_once(',')
            .ok_or_else(|| format!("scenario `{s}`: expected FLAGS,CHUNK such as `AEDG,2MB`"))?;
        let chars: Vec<char> = flags.trim().chars().collect();
        if chars.len() != 4 {
            return Err(format!(
                "scenario `{s}`: expected four letters (A/a, E/e, D/d, G/g), found `{flags}`"
            ));
        }
        let mut out = [false; 4];
        for (k, (c, want)) in chars.iter().zip(['a', 'e', 'd', 'g']).enumerate() {
            if c.to_ascii_lowercase() != want {
                return Err(format!(
                    "scenario `{s}`: letter {} must be `{}` or `{want}`, found `{c}`",
                    k + 1,
                    want.to_ascii_uppercase()
                ));
            }
            out[k] = c.is_ascii_uppercase();
        }
        let chunk = chunk.trim();
        let chunk = if chunk.eq_ignore_ascii_case("x") || chunk.eq_ignore_ascii_case("xmb") {
            None
        } else {
            let digits = chunk
                .strip_suffix("MB")
                .or_else(|| chunk.strip_suffix("mb"))
                .ok_or_else(|| format!("scenario `{s}`: chunk `{chunk}` must be like 2MB or X"))?;
            let mb: u64 = digits
                .parse()
                .map_err(|_| format!("scenario `{s}`: chunk `{chunk}` must be like 2MB or X"))?;
            if mb == 0 {
                return Err(format!("scenario `{s}`: chunk size must be positive"));
            }
            Some(mb << 20)
        };
        Ok(Scenario {
            affinity: out[0],
            engine_locks: out[1],
            dgl: out[2],
            peer: out[3],
            chunk,
        })
    }

    /// Apply to a workload policy and simulator settings. The allocator
    /// becomes GPUSync (the scenarios are GPUSync's).
    pub fn apply(&self, policy: &mut Policy, cfg: &mut SimConfig) {
        policy.gpu_allocator = GpuAllocator::GpuSync {
            affinity: self.affinity,
        };
        policy.engine_locks = self.engine_locks;
        // Without engine locks GPUSync has one thing per GPU to hand out:
        // a token is the whole GPU, ρ = 1 (§4.2 sets ρ to the engines it
        // arbitrates per GPU; "using engine locks when ρ = 1 is a
        // meaningless test", §5, so the E scenarios are the ρ = 2 ones).
        // With engine locks the file's ρ stays.
        if !self.engine_locks {
            policy.tokens_per_gpu = 1;
        }
        policy.peer_locking = if self.dgl {
            PeerLocking::Dgl
        } else {
            PeerLocking::Nested
        };
        policy.chunk_size = self.chunk;
        cfg.peer_migration = self.peer;
    }

    pub fn name(&self) -> String {
        let l = |b: bool, c: char| if b { c.to_ascii_uppercase() } else { c };
        format!(
            "{}{}{}{},{}",
            l(self.affinity, 'a'),
            l(self.engine_locks, 'e'),
            l(self.dgl, 'd'),
            l(self.peer, 'g'),
            match self.chunk {
                None => "X".to_string(),
                Some(c) => format!("{}MB", c >> 20),
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_names() {
        let s = Scenario::parse("AEdG,2MB").expect("valid");
        assert_eq!(
            s,
            Scenario {
                affinity: true,
                engine_locks: true,
                dgl: false,
                peer: true,
                chunk: Some(2 << 20)
            }
        );
        assert_eq!(s.name(), "AEdG,2MB");
        let s = Scenario::parse("aedg,X").expect("valid");
        assert_eq!(s.chunk, None);
        assert_eq!(s.name(), "aedg,X");
        assert!(!s.affinity && !s.engine_locks && !s.dgl && !s.peer);
    }

    #[test]
    fn rejects_bad_names_with_reasons() {
        for (bad, why) in [
            ("AEDG", "FLAGS,CHUNK"),
            ("AED,2MB", "four letters"),
            ("AEDX,2MB", "letter 4"),
            ("AEDG,2GB", "like 2MB"),
            ("AEDG,0MB", "positive"),
        ] {
            let e = Scenario::parse(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn apply_sets_policy() {
        let mut p = Policy::default();
        let mut c = SimConfig::default();
        Scenario::parse("aEDg,4MB")
            .expect("valid")
            .apply(&mut p, &mut c);
        assert_eq!(p.gpu_allocator, GpuAllocator::GpuSync { affinity: false });
        assert!(p.engine_locks);
        assert_eq!(p.peer_locking, PeerLocking::Dgl);
        assert_eq!(p.chunk_size, Some(4 << 20));
        assert!(!c.peer_migration);
    }
}
