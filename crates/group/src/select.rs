//! Selectors (§4.3, figure 10): for each group, in the order groups are tried (most accessed
//! first), a disjunction over its members of the fewest call sites that tell that member apart
//! from every context not already claimed by an earlier group; and [`classify`], which applies
//! them to a context the way the grouped allocator does (first matching group wins).
//!
//! Settled here where the paper is open: the contexts that count as conflicts are all of the
//! profile's full contexts, grouped, kept or not, except those of the group itself and of
//! earlier groups; "lower in the stack" is read as nearer the allocation (the innermost frame
//! first), which also keeps the run-time walk short; among sites of equal conflicts the one
//! nearer the allocation in the member's own context wins; equal conjunctions are kept once.

use crate::Groups;

/// Which group the selectors give a context whose call sites (indices into [`Groups::sites`])
/// are `sites`: the first group with a conjunction all of whose sites are among them.
pub fn classify(groups: &Groups, sites: &[u32]) -> Option<u32> {
    groups.groups.iter().position(|g| g.selector.iter().any(|conj| conj.iter().all(|s| sites.contains(s)))).map(|k| k as u32)
}

/// A context the selectors put in another group than grouping did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Misclassified {
    /// Index into [`Groups::contexts`].
    pub context: u32,
    /// Its group.
    pub expected: Option<u32>,
    /// The group its selectors give.
    pub got: Option<u32>,
}

/// The profile's contexts the selectors misclassify: those that share every site of some
/// earlier conjunction (their call chains cannot be told apart with sites alone).
pub fn misclassified(groups: &Groups) -> Vec<Misclassified> {
    groups
        .contexts
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let got = classify(groups, &c.sites);
            (got != c.group).then_some(Misclassified { context: i as u32, expected: c.group, got })
        })
        .collect()
}

/// Builds every group's selector (figure 10) and sets [`Groups::walk_depth`]. Groups must be
/// in the order they are tried, and each context's `group` set.
pub fn identify(groups: &mut Groups) {
    let contexts = &groups.contexts;
    // ignored[c]: c belongs to the group being built or to an earlier one.
    let mut ignored = vec![false; contexts.len()];
    let mut selectors = Vec::with_capacity(groups.groups.len());
    for (k, g) in groups.groups.iter().enumerate() {
        for (c, ctx) in contexts.iter().enumerate() {
            if ctx.group == Some(k as u32) {
                ignored[c] = true;
            }
        }
        let mut selector: Vec<Vec<u32>> = Vec::new();
        for &m in &g.members {
            let chain = &contexts[m as usize].sites;
            // The contexts the conjunction so far still matches.
            let mut matching: Vec<usize> = (0..contexts.len()).filter(|&c| !ignored[c]).collect();
            let mut conj: Vec<u32> = Vec::new();
            let mut conflicts = usize::MAX;
            loop {
                // Innermost first, so the first of equal counts is the lowest in the stack.
                let best = chain
                    .iter()
                    .map(|&s| (matching.iter().filter(|&&c| contexts[c].sites.contains(&s)).count(), s))
                    .min_by_key(|&(count, _)| count);
                let Some((count, site)) = best else { break };
                if count == conflicts {
                    break;
                }
                conj.push(site);
                conflicts = count;
                matching.retain(|&c| contexts[c].sites.contains(&site));
            }
            if conj.is_empty() {
                continue; // a member without call sites: nothing can select it
            }
            let mut key = conj.clone();
            key.sort_unstable();
            if !selector.iter().any(|o| {
                let mut ok = o.clone();
                ok.sort_unstable();
                ok == key
            }) {
                selector.push(conj);
            }
        }
        selectors.push(selector);
    }
    let mut depth = 0;
    for (g, sel) in groups.groups.iter_mut().zip(selectors) {
        for &s in sel.iter().flatten() {
            depth = depth.max(groups.sites[s as usize].max_depth + 1);
        }
        g.selector = sel;
    }
    groups.walk_depth = depth;
}

#[cfg(test)]
mod tests;
