"""`credit.roles`: the one place where `credit.format_role` folds format tokens into reasoning or action."""

import pytest
import torch
from batch_factory import random_batch

from agentbench_af.credit import CreditConfig, compute_token_weights, credit_roles, credit_view
from agentbench_af.formats.roles import Role

P, R, A, F = int(Role.PROMPT), int(Role.REASONING), int(Role.ACTION), int(Role.FORMAT)


def test_format_tokens_fold_into_the_named_role_and_nothing_else_moves():
    roles = torch.tensor([[P, F, R, A, F], [P, P, A, F, R]], dtype=torch.int8)  # (B, T)
    assert credit_roles(roles, "reasoning").tolist() == [[P, R, R, A, R], [P, P, A, R, R]]
    assert credit_roles(roles, "action").tolist() == [[P, A, R, A, A], [P, P, A, A, R]]
    assert credit_roles(roles, "action").dtype == torch.int8
    with pytest.raises(ValueError, match="format_role"):
        credit_roles(roles, "format")


def test_credit_view_is_a_copy_and_weights_read_format_role_once():
    batch = random_batch(3)
    assert bool((batch.roles == F).any())  # the factory labels format tokens truly
    before = batch.roles.clone()
    for fmt in ("reasoning", "action"):
        cfg = CreditConfig(weighting="actfocus", format_role=fmt)
        view = credit_view(batch, cfg)
        assert torch.equal(batch.roles, before) and not bool((view.roles == F).any())
        assert torch.equal(view.roles, credit_roles(batch.roles, fmt))
        # weighting the true labels or the folded ones is the same: format_role is applied once, either way
        assert torch.equal(compute_token_weights(batch, cfg), compute_token_weights(view, cfg))
