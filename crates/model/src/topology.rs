//! PCIe topology: migration distance between GPUs (seed 004 §2).

use crate::types::Platform;

impl Platform {
    /// Migration distance between GPUs `a` and `b` (indices into
    /// [`Platform::gpus`]), seed 004 §2: "the number of links to the nearest
    /// common switch or I/O hub of two GPUs". GPUSync's cost predictor keys
    /// migration costs on it.
    ///
    /// With a PCIe topology (every GPU `attach`ed), counting the link from
    /// the GPU to the switch it is attached to:
    ///
    /// - the same GPU: 0;
    /// - GPUs under the same switch: 1;
    /// - GPUs that share only the I/O hub (seed 004 Fig. 1, GPUs 0 and 2): 2;
    /// - in general, the number of links from a GPU up to the nearest common
    ///   ancestor, taking the longer side where the two paths differ in
    ///   length;
    /// - GPUs whose trees have no common ancestor (different NUMA nodes,
    ///   each with its own I/O hub): one more than the longer path to the
    ///   root, the extra link being the inter-node hop (3 in Fig. 1). Such
    ///   migrations cannot copy GPU to GPU and go through system memory.
    ///
    /// Without a topology (either GPU not attached): 0 for the same GPU, 1
    /// for GPUs of the same cluster, 2 otherwise. An index out of range
    /// counts as a GPU of another cluster.
    pub fn migration_distance(&self, a: usize, b: usize) -> u32 {
        if a == b {
            return 0;
        }
        let (Some(ga), Some(gb)) = (self.gpus.get(a), self.gpus.get(b)) else {
            return 2;
        };
        match (ga.attach, gb.attach) {
            (Some(na), Some(nb)) => {
                let pa = self.pcie_path_to_root(na);
                let pb = self.pcie_path_to_root(nb);
                // Links from a GPU to pa[i]: i + 1.
                for (i, node) in pa.iter().enumerate() {
                    if let Some(j) = pb.iter().position(|m| m == node) {
                        return links(i.max(j) + 1);
                    }
                }
                links(pa.len().max(pb.len()) + 1)
            }
            _ if ga.cluster == gb.cluster => 1,
            _ => 2,
        }
    }

    /// `node` and its ancestors up to the root. Bounded by the number of
    /// nodes, so a cyclic (unvalidated) topology cannot loop.
    fn pcie_path_to_root(&self, node: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut current = Some(node);
        while let Some(n) = current {
            if path.len() > self.pcie.len() || path.contains(&n) {
                break;
            }
            let Some(pcie) = self.pcie.get(n) else { break };
            path.push(n);
            current = pcie.parent;
        }
        path
    }
}

fn links(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use crate::types::*;

    /// seed 004 Fig. 1: two NUMA nodes, each an I/O hub with two switches
    /// of two GPUs.
    pub(crate) fn fig1() -> Platform {
        let mut pcie = Vec::new();
        let mut gpus = Vec::new();
        for node in 0..2 {
            let hub = pcie.len();
            pcie.push(PcieNode {
                name: format!("hub{node}"),
                parent: None,
            });
            for s in 0..2 {
                let switch = pcie.len();
                pcie.push(PcieNode {
                    name: format!("switch{}", node * 2 + s),
                    parent: Some(hub),
                });
                for _ in 0..2 {
                    gpus.push(Gpu {
                        name: format!("gpu{}", gpus.len()),
                        cluster: node,
                        copy_engines: 1,
                        attach: Some(switch),
                    });
                }
            }
        }
        Platform {
            clusters: (0..2)
                .map(|c| Cluster {
                    name: format!("node{c}"),
                    cores: 6,
                    first_core: 6 * c as u32,
                    gpus: (4 * c..4 * c + 4).collect(),
                })
                .collect(),
            gpus,
            pcie,
            bandwidth: Bandwidth::default(),
        }
    }

    #[test]
    fn seed004_fig1_distances() {
        let p = fig1();
        assert_eq!(p.migration_distance(0, 0), 0);
        assert_eq!(p.migration_distance(0, 1), 1);
        assert_eq!(p.migration_distance(0, 2), 2); // the paper's example
        assert_eq!(p.migration_distance(3, 1), 2);
        assert_eq!(p.migration_distance(0, 4), 3);
        assert_eq!(p.migration_distance(7, 0), 3);
        assert_eq!(p.migration_distance(6, 7), 1);
        for a in 0..8 {
            for b in 0..8 {
                assert_eq!(p.migration_distance(a, b), p.migration_distance(b, a));
            }
        }
    }

    #[test]
    fn uneven_depths_take_the_longer_side() {
        let mut p = fig1();
        // gpu0 directly on hub0: gpu0-hub0 is 1 link, gpu2-switch1-hub0 2.
        p.gpus[0].attach = Some(0);
        assert_eq!(p.migration_distance(0, 2), 2);
        assert_eq!(p.migration_distance(0, 4), 3);
    }

    #[test]
    fn without_topology_uses_clusters() {
        let mut p = fig1();
        for g in &mut p.gpus {
            g.attach = None;
        }
        assert_eq!(p.migration_distance(0, 0), 0);
        assert_eq!(p.migration_distance(0, 3), 1);
        assert_eq!(p.migration_distance(0, 4), 2);
        assert_eq!(p.migration_distance(0, 99), 2);
    }

    #[test]
    fn cyclic_topology_does_not_hang() {
        let mut p = fig1();
        p.pcie[0].parent = Some(1); // hub0 <-> switch0
        let _ = p.migration_distance(0, 2);
        let _ = p.migration_distance(0, 4);
    }
}
