"""The CVL learner: contrastive critic, psi_target EMA, xi EMA and policy (paper algorithm 1).

One ``update(batch)`` on a reward-labelled ``ContrastiveBatch``:

1. critic step on the InfoNCE + partition loss (eq. 9-10);
2. ``psi_target <- (1 - tau) psi_target + tau psi`` (polyak);
3. (RFF estimator) ``xi <- beta xi + (1 - beta) mean_j F(psi_target(s+_j)) r_j`` (eq. 12);
4. policy step on eq. 13-15 with Q from eq. 12 (RFF) or eq. 11 (direct, over this batch's
   future states encoded by ``psi_target``).

``pretrain_update(batch)`` runs steps 1-2 only, on reward-free batches (paper sec. 5.2): ``xi``
only ever sees labelled rewards and the policy is trained during finetuning only.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from torch import Tensor, nn

from cvl_algos.bc import bc_loss
from cvl_algos.common import make_adam, policy_from_config, return_weight_options
from cvl_algos.cvl.acting import (
    FutureBank,
    candidate_actions,
    select_action_by_q,
    select_flow_action_by_q,
)
from cvl_algos.cvl.config import FLOW_EXTRACTIONS, CVLConfig, CVLMCConfig
from cvl_algos.cvl.extraction import EXTRACTION_LOSSES, extraction_kwargs, flow_matching_loss
from cvl_algos.cvl.losses import (
    QFn,
    contrastive_critic_loss,
    other_anchors_actions,
    td_contrastive_critic_loss,
)
from cvl_algos.cvl.q import (
    XiState,
    direct_log_density_fn,
    direct_q_fn,
    ensemble_q_fn,
    gated_data_q_fn,
    rff_q_fn,
    xi_ema,
    xi_estimate,
    xi_zeta_estimate,
)
from cvl_algos.cvl.readouts import CriticReadouts
from cvl_algos.pretraining import PretrainingLearner
from cvl_algos.stages import ComputeStage, GradientStage, PolyakStage, Stage
from cvl_models import ContrastiveCritic
from cvl_models.flow import FlowPolicy, VelocityField, flow_samples
from cvl_models.noise import observation_seed, standard_normal, uniform_actions
from cvl_models.rff import make_random_features

__all__ = ["CVLLearner", "CVLMCLearner", "critic_name", "redraw_seed"]


def critic_name(index: int, base: str = "critic") -> str:
    """The name of critic ``index``'s module (or of its ``base``: "psi_target", a stage key):
    ``base`` for the first critic, ``base_k`` for critic k > 0 (``num_critics``)."""
    return base if index == 0 else f"{base}_{index}"


def redraw_seed(seed: int, step: int) -> int:
    """The seed of the features ``rff_redraw`` draws at update ``step`` of learner ``seed``: a
    function of the two alone, so a resumed run draws what an uninterrupted one drew."""
    return (int(seed) + 1) * 1_000_003 + int(step)


class CVLLearner(CriticReadouts, PretrainingLearner):
    """Contrastive Value Learning (Mazoure et al.), Q from random Fourier features by default.

    Networks: ``critic`` (phi and psi encoders), ``psi_target`` (polyak EMA copy of
    ``critic.psi_net``, which encodes future states for both Q estimators), ``policy``
    (tanh-Gaussian), ``rff`` (fixed random features, seeded by the learner's seed) and
    ``xi_state``; with ``num_critics`` > 1 also ``critic_k`` and ``psi_target_k`` for k >= 1
    (``critics`` and ``psi_targets`` list them all, the first critic's first).
    """

    name = "cvl"
    config_cls = CVLConfig
    sampler_kind = "contrastive"
    pretraining = "related_tasks"
    progress_metrics = ("critic_loss", "policy_loss")

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action_dim: int,
        config: CVLConfig | None = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
    ) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg: CVLConfig = self.config
        self.chunk_dim = self.action_dim * cfg.action_chunk
        """Size of the actions the critic and the policy take: ``action_chunk`` env actions."""
        with self.rng_scope():
            self.critic = self._make_critic()
            self.psi_target = copy.deepcopy(self.critic.psi_net).requires_grad_(False)
            self.phi_target: nn.Module | None = None
            if cfg.critic_objective == "td_infonce":
                self.phi_target = copy.deepcopy(self.critic.phi_net).requires_grad_(False)
            self.policy = self._make_policy()
            # ``num_critics`` > 1: the other critics, drawn after the policy (one critic draws
            # what it always drew); ``critics[0]`` is ``critic``.
            self.critics = [self.critic]
            self.critics += [self._make_critic() for _ in range(cfg.num_critics - 1)]
            # ``action_contrast_source`` "behaviour" / "behaviour_flow": the term's negatives
            # come from this tanh-Gaussian / flow fitted to the data (drawn last: other settings
            # draw as before).
            self.behaviour: nn.Module | None = None
            if cfg.action_contrast_source == "behaviour":
                self.behaviour = policy_from_config(self.obs_shape, self.chunk_dim, cfg)
            elif cfg.action_contrast_source == "behaviour_flow":
                self.behaviour = VelocityField(
                    self.obs_shape, self.chunk_dim, cfg.hidden, cfg.torso
                )
            if self.behaviour is not None:
                self.behaviour = self.behaviour.to(self.device)
        self.psi_targets = [self.psi_target] + [
            copy.deepcopy(critic.psi_net).requires_grad_(False) for critic in self.critics[1:]
        ]
        self.init_policy_ema()
        self.rff = make_random_features(
            cfg.rff_kind,
            cfg.latent_dim,
            cfg.num_rff_features,
            temperature=cfg.temperature if cfg.q_temperature is None else cfg.q_temperature,
            seed=self.seed,
            orthogonal=cfg.rff_orthogonal,
        ).to(self.device)
        self.xi_state = XiState(cfg.num_rff_features, cfg.self_normalized).to(self.device)
        self.future_bank: FutureBank | None = None
        if cfg.acts_by_q() and cfg.q_estimator == "mc":
            self.future_bank = FutureBank(cfg.batch_size, cfg.latent_dim).to(self.device)
        self.critic_opts = [make_adam(critic.parameters(), cfg.lr) for critic in self.critics]
        self.critic_opt = self.critic_opts[0]
        self.policy_opt = make_adam(self.policy.parameters(), cfg.lr)
        self.behaviour_opt = None
        if self.behaviour is not None:
            self.behaviour_opt = make_adam(self.behaviour.parameters(), cfg.lr)
        self._critic_loss = self.maybe_compile(contrastive_critic_loss)
        self._td_critic_loss = self.maybe_compile(td_contrastive_critic_loss)
        self._extraction_loss = self.maybe_compile(EXTRACTION_LOSSES[cfg.policy_extraction])

    def _make_critic(self) -> ContrastiveCritic:
        """A contrastive critic (phi and psi encoders) of the config's sizes."""
        cfg: CVLConfig = self.config
        return ContrastiveCritic(
            self.obs_shape,
            self.chunk_dim,
            latent_dim=cfg.latent_dim,
            hidden=cfg.hidden,
            normalize=cfg.normalize,
            temperature=cfg.temperature,
            torso=cfg.torso,
            learn_temperature=cfg.learn_temperature,
            action_bias=cfg.action_contrast_bias,
            kernel=cfg.critic_kernel,
        ).to(self.device)

    def _make_policy(self) -> nn.Module:
        """The tanh-Gaussian of eq. 13-15, or a `FlowPolicy` for the flow extractions."""
        cfg: CVLConfig = self.config
        if cfg.policy_extraction in FLOW_EXTRACTIONS:
            policy = FlowPolicy(self.obs_shape, self.chunk_dim, cfg.hidden, cfg.torso)
        else:
            policy = policy_from_config(self.obs_shape, self.chunk_dim, cfg)
        return policy.to(self.device)

    # -- checkpoint contents ----------------------------------------------------------------------

    def state_modules(self) -> dict[str, nn.Module]:
        modules = {
            "critic": self.critic,
            "psi_target": self.psi_target,
            "policy": self.policy,
            "rff": self.rff,
            "xi_state": self.xi_state,
        }
        if self.phi_target is not None:
            modules["phi_target"] = self.phi_target
        if self.future_bank is not None:
            modules["future_bank"] = self.future_bank
        if self.behaviour is not None:
            modules["behaviour"] = self.behaviour
        for index in range(1, len(self.critics)):
            modules[critic_name(index)] = self.critics[index]
            modules[critic_name(index, "psi_target")] = self.psi_targets[index]
        return {**modules, **self.policy_ema_modules()}

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        critics = {critic_name(k): opt for k, opt in enumerate(self.critic_opts)}
        if self.behaviour_opt is not None:
            critics["behaviour"] = self.behaviour_opt
        return {**critics, "policy": self.policy_opt}

    @property
    def sampler_mode(self) -> str:
        """``config.sampler_mode``: one episode per batch (the paper's H = 500), uniform, or
        blocks from episodes with a shared start."""
        return self.config.sampler_mode

    @property
    def sampler_options(self) -> dict[str, Any]:
        """``start_groups`` for the ``"shared_start"`` sampler; ``behaviour_top_fraction`` when
        the behaviour term clones the top episodes only (``bc_top_fraction`` < 1);
        ``action_chunk``; ``return_weight_temperature``, ``return_weight_baseline`` and
        ``return_weight_scope`` for return-weighted anchors; ``cap_neighbours`` for the policy
        step's neighbourhood cap (``bc_q_cap_neighbours``)."""
        cfg: CVLConfig = self.config
        options: dict[str, Any] = {}
        if cfg.sampler_mode == "shared_start":
            options["start_groups"] = cfg.start_groups
        if cfg.bc_top_fraction < 1.0:
            options["behaviour_top_fraction"] = cfg.bc_top_fraction
        if cfg.action_chunk > 1:
            options["action_chunk"] = cfg.action_chunk
        if cfg.return_weight_scope != "all":
            options["return_weight_scope"] = cfg.return_weight_scope
        if cfg.bc_q_cap_neighbours:
            options["cap_neighbours"] = cfg.bc_q_cap_neighbours
        return {**options, **return_weight_options(cfg)}

    # -- pieces of an update ----------------------------------------------------------------------

    def gradient_stages(self) -> tuple[Stage, ...]:
        """Algorithm 1 as stages: the critic's stages (`critic_stages`), then ``psi_future``,
        the ``xi`` average and the future bank (`_after_critic`), then the policy step."""
        policy = GradientStage("policy", "policy", self._policy_loss_of, "policy_grad_norm", "pi")
        return (*self.critic_stages(), ComputeStage(self._after_critic), policy)

    def check_update_batch(self, batch: Any) -> None:
        if batch.reward_future is None or batch.reward_t is None:
            raise ValueError(
                "CVLLearner.update needs reward-labelled batches; use pretrain_update for "
                "reward-free data"
            )

    def critic_stages(self) -> tuple[Stage, ...]:
        """Critic gradient step (eq. 10, or TD InfoNCE) followed by the polyak updates of
        psi_target (and of phi_target, TD InfoNCE's); with ``num_critics`` > 1 the same for
        each other critic, on the same batch; none from update ``critic_updates`` on."""
        cfg: CVLConfig = self.config
        if cfg.critic_updates and self.step >= cfg.critic_updates:
            return ()  # the critic is frozen (early stopping)
        key = "critic_td" if self._bootstraps() else "critic"
        stages: tuple[Stage, ...] = ()
        if self.behaviour is not None:
            stages += (
                GradientStage("behaviour", "behaviour", self._behaviour_loss_of, None, "behaviour"),
            )
        for index in range(len(self.critics)):
            name, target = critic_name(index), critic_name(index, "psi_target")
            loss = functools.partial(self._critic_loss_of, index=index)
            stages += (
                GradientStage(name, name, loss, f"{name}_grad_norm", critic_name(index, key)),
                PolyakStage(target, f"{name}.psi_net", cfg.psi_target_tau),
            )
        if self.phi_target is not None:
            stages += (PolyakStage("phi_target", "critic.phi_net", cfg.psi_target_tau),)
        return stages

    def _bootstraps(self) -> bool:
        """True when this update's critic step is TD InfoNCE's (after ``td_warmup_steps``)."""
        cfg: CVLConfig = self.config
        return cfg.critic_objective == "td_infonce" and self.step >= cfg.td_warmup_steps

    def _critic_loss_of(
        self, batch: Any, carry, index: int = 0
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Critic ``index``'s loss (eq. 9-10, or TD InfoNCE for the one critic it allows); the
        metrics of critic k > 0 carry the suffix ``_k``."""
        cfg: CVLConfig = self.config
        critic = self.critics[index]
        if self._bootstraps():
            loss, metrics = self._td_critic_loss(
                critic,
                self.phi_target,
                self.psi_target,
                self.policy,
                batch,
                cfg.discount,
                cfg.lambda_partition,
            )
        else:  # TD InfoNCE's warm-up trains eq. 9-10's InfoNCE.
            objective = "infonce" if cfg.critic_objective == "td_infonce" else cfg.critic_objective
            loss, metrics = self._critic_loss(
                critic,
                batch,
                cfg.lambda_partition,
                objective,
                self._action_contrast_weight(index),
                cfg.action_contrast_negatives,
                self._negative_actions(batch, index),
            )
        if cfg.learn_temperature:
            metrics = {**metrics, "temperature": critic.detached_temperature()}
        if index:
            metrics = {f"{key}_{index}": value for key, value in metrics.items()}
        return loss, metrics

    def _behaviour_loss_of(self, batch: Any, carry) -> tuple[Tensor, dict[str, Tensor]]:
        """The fit of the behaviour model that draws the action-contrast term's negatives:
        maximum likelihood of the data's actions (`cvl_algos.bc.bc_loss`, BC's entropy bonus
        0.1), or conditional flow matching (`flow_matching_loss`) for "behaviour_flow"."""
        if self.config.action_contrast_source == "behaviour_flow":
            loss, metrics = flow_matching_loss(self.behaviour, batch.obs_t, batch.action_t)
            return loss, {"behaviour_flow_loss": metrics["flow_bc_loss"]}
        loss, metrics = bc_loss(batch.obs_t, batch.action_t, self.behaviour)
        return loss, {"behaviour_nll": metrics["nll"]}

    def _negative_actions(self, batch: Any, index: int) -> Tensor | None:
        """(K, B, A) negatives for critic ``index``'s action-contrast term: behaviour-model
        draws at the batch's states (``action_contrast_source`` "behaviour", or "behaviour_flow":
        the flow integrated from K noises per state), uniform actions on [-1, 1] ("uniform"),
        the batch's actions plus Gaussian noise, clipped to [-1, 1] ("perturbed"), K - K // 2
        other anchors' actions then K // 2 uniform ones ("batch_uniform"), the policy's mode and
        n - 1 of its samples then K - n uniform ones ("policy_uniform", n =
        `CVLConfig.policy_negatives`, K // 2 by default; the policy's average with
        ``action_contrast_policy="average"``), else None (the
        loss takes other anchors' actions)."""
        cfg: CVLConfig = self.config
        if cfg.action_contrast_source == "batch" or not self._action_contrast_weight(index):
            return None
        num = cfg.action_contrast_negatives
        if cfg.action_contrast_source == "uniform":
            shape = (num, *batch.action_t.shape)
            return uniform_actions(shape, batch.action_t.dtype, batch.action_t.device)
        if cfg.action_contrast_source == "batch_uniform":
            action_t = batch.action_t
            drawn = uniform_actions((num // 2, *action_t.shape), action_t.dtype, action_t.device)
            return torch.cat([other_anchors_actions(action_t, num - num // 2), drawn])
        if cfg.action_contrast_source == "policy_uniform":
            action_t, own_count = batch.action_t, cfg.policy_negatives()
            average = cfg.action_contrast_policy == "average"
            with torch.no_grad():
                own = candidate_actions(
                    self.policy_ema if average else self.policy, batch.obs_t, own_count - 1
                )
            drawn = uniform_actions(
                (num - own_count, *action_t.shape), action_t.dtype, action_t.device
            )
            return torch.cat([own, drawn])
        if cfg.action_contrast_source == "perturbed":
            action_t = batch.action_t
            noise = standard_normal((num, *action_t.shape), action_t.dtype, action_t.device)
            return (action_t + cfg.action_contrast_noise * noise).clamp(-1.0, 1.0)
        with torch.no_grad():
            if cfg.action_contrast_source == "behaviour_flow":
                return flow_samples(self.behaviour, batch.obs_t, num, cfg.flow_steps)
            actions, _ = self.behaviour.sample(batch.obs_t, num)
        return actions

    def _action_contrast_weight(self, index: int) -> float:
        """The action-contrast term's weight in critic ``index``'s loss: the config's for every
        critic, or for critic 0 only with ``action_contrast_critics="first"``."""
        cfg: CVLConfig = self.config
        first_only = cfg.action_contrast_critics == "first"
        return 0.0 if first_only and index else cfg.action_contrast_weight

    def _candidates(self, batch: Any) -> tuple[Tensor, Tensor]:
        """The states whose arrival rewards Q weighs, and those rewards: the batch's future
        states (eq. 11), or its next states for TD InfoNCE (after its warm-up), whose critic
        scores those."""
        if self._bootstraps():
            return batch.obs_next, batch.reward_t
        return batch.obs_future, batch.reward_future

    def _after_critic(self, batch: Any, carry) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """``psi_target`` latents of the batch's candidate states (`_candidates`, for Q), the
        xi EMA of eq. 12 (RFF estimator) and the future bank (acting); no gradients."""
        obs_future, reward_future = self._candidates(batch)
        psi_future = self.psi_target(obs_future)
        metrics = {}
        if self.config.q_estimator == "rff":
            metrics = self._xi_step(psi_future, reward_future)
        if self.future_bank is not None:
            self.future_bank.store(psi_future, reward_future)
        others = {
            critic_name(k, "psi_future"): self.psi_targets[k](obs_future)
            for k in range(1, len(self.critics))
        }
        return {"psi_future": psi_future, "reward_future": reward_future, **others}, metrics

    @torch.no_grad()
    def _xi_step(self, psi_future: Tensor, reward_future: Tensor) -> dict[str, Tensor]:
        """xi EMA of eq. 12 from this batch's psi_target features and arrival rewards; with
        ``rff_redraw`` after a new draw of the features (`redraw_seed`)."""
        if self.config.rff_redraw:
            self.rff.redraw(redraw_seed(self.seed, self.step))
        state = self.xi_state
        first = state.count == 0
        if state.zeta is None:
            pairs = [(state.xi, xi_estimate(self.rff, psi_future, reward_future))]
        else:
            estimates = xi_zeta_estimate(self.rff, psi_future, reward_future)
            pairs = list(zip((state.xi, state.zeta), estimates))
        for buffer, estimate in pairs:
            averaged = xi_ema(buffer, estimate, self.config.beta_xi)
            buffer.copy_(torch.where(first, estimate, averaged))
        state.count.add_(1)
        return {"xi_norm": torch.linalg.vector_norm(state.xi)}

    def _q_fn(
        self,
        psi_futures: list[Tensor] | None,
        reward_future: Tensor | None,
        gate_actions: Tensor | None = None,
    ):
        """Q of eq. 12 (RFF) or eq. 11 over the given future latents (one per critic, each its
        own ``psi_target``'s), critics detached; the minimum over the critics
        (`cvl_algos.cvl.q.ensemble_q_fn`) when there are several, or their mean
        (``critic_reduction``); each critic's gated by the data's actions ``gate_actions`` when
        given (``q_support_gate``)."""
        cfg: CVLConfig = self.config
        if cfg.q_estimator == "rff":
            return rff_q_fn(
                self.critic, self.rff, self.xi_state.xi, cfg.discount, self.xi_state.zeta
            )
        assert psi_futures is not None and len(psi_futures) == len(self.critics)
        fns = [
            direct_q_fn(
                critic,
                psi,
                reward_future,
                cfg.discount,
                cfg.self_normalized,
                cfg.q_expectile,
                gate_actions,
                cfg.q_temperature,
            )
            for critic, psi in zip(self.critics, psi_futures, strict=True)
        ]
        return ensemble_q_fn(fns, cfg.critic_reduction)

    def _carried_psi_futures(self, carry) -> list[Tensor]:
        """Each critic's future latents as `_after_critic` put them into the carry."""
        others = [carry[critic_name(k, "psi_future")] for k in range(1, len(self.critics))]
        return [carry["psi_future"], *others]

    def _policy_loss_of(self, batch: Any, carry) -> tuple[Tensor, dict[str, Tensor]]:
        """The configured policy extraction's loss (`EXTRACTION_LOSSES`) on the policy step's
        anchors (`ContrastiveBatch.for_policy`: the critic's, or its own with
        ``return_weight_scope`` "critic" or "policy"); Q's futures are the critic's batch's."""
        cfg: CVLConfig = self.config
        batch = batch.for_policy()
        if cfg.policy_extraction == "flow_select":
            return self._extraction_loss(self.policy.velocity, batch.obs_t, batch.action_t)
        gate_actions = batch.action_t if cfg.q_support_gate else None
        psi_futures = self._carried_psi_futures(carry)
        q_fn = self._q_fn(psi_futures, carry["reward_future"], gate_actions)
        if cfg.policy_extraction == "flow":
            return self._extraction_loss(
                self.policy, q_fn, batch.obs_t, batch.action_t, **extraction_kwargs(cfg)
            )
        kwargs = extraction_kwargs(cfg)
        if gate_actions is not None and cfg.policy_extraction == "ddpgbc":
            kwargs["data_q_fn"] = gated_data_q_fn(self._q_fn(psi_futures, carry["reward_future"]))
        if cfg.bc_density_weight:
            kwargs["density_fn"] = direct_log_density_fn(self.critic, carry["psi_future"])
            kwargs["density_weight"] = cfg.bc_density_weight
        return self._extraction_loss(self.policy, q_fn, batch, **kwargs)

    def policy_action(self, obs_t: Tensor, deterministic: bool) -> Tensor:
        """The first env action of `chunk_action`'s chunk (all of it when ``action_chunk`` is
        1): acting plans ``action_chunk`` actions and executes one."""
        return self.chunk_action(obs_t, deterministic)[:, : self.action_dim]

    def chunk_action(self, obs_t: Tensor, deterministic: bool) -> Tensor:
        """``(B, chunk_dim)``: the policy's mode (``mu(s, 0)`` for "flow"); with
        ``act_candidates`` the best of the mode and that many policy samples by Q, and for
        "flow_select" the best of ``flow_select_samples`` behaviour-flow samples by Q
        (`cvl_algos.cvl.acting`; the same candidates for the same observation on every call).
        Before the first labelled update the direct estimator has no future states: then the
        mode (flow_select: the first sample)."""
        cfg: CVLConfig = self.config
        if not deterministic or not cfg.acts_by_q():
            return super().policy_action(obs_t, deterministic)
        q_fn = self.acting_q_fn()
        # Deterministic acting stays deterministic: the candidates are drawn from a generator
        # seeded afresh on each call (with the learner's seed, or for flow_select_noise="fresh"
        # with the observations'), and the learner's own (training) RNG is left untouched.
        cuda = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            fresh = cfg.flow_select_noise == "fresh"  # the config allows it with flow_select only
            torch.manual_seed(observation_seed(obs_t, self.seed) if fresh else self.seed)
            if cfg.policy_extraction == "flow_select":
                return select_flow_action_by_q(
                    self.acting_policy,
                    q_fn,
                    obs_t,
                    cfg.flow_select_samples,
                    cfg.flow_steps,
                    cfg.flow_select_noise_scale,
                )
            if q_fn is None:
                return super().policy_action(obs_t, deterministic)
            return select_action_by_q(self.acting_policy, q_fn, obs_t, cfg.act_candidates)

    def acting_q_fn(self) -> QFn | None:
        """The Q that acting selects by: eq. 12 (RFF) or eq. 11 over the future bank's latents
        and rewards, the latest labelled batch's. None for the direct estimator when it keeps no
        bank (the learner does not act by Q) or before the first labelled update (no future
        states yet). Reads the bank's size: one host sync."""
        if self.config.q_estimator == "rff":
            return self._q_fn(None, None)
        if self.future_bank is None:
            return None
        psi_future, reward_future = self.future_bank.valid()
        if psi_future.shape[0] == 0:
            return None
        return self._q_fn([psi_future], reward_future)

    # -- pretraining and Q ----------------------------------------------------

    def _pretrain_step(self, batch: Any) -> dict[str, Tensor]:
        """Critic-only step (no xi, no policy) for reward-free pretraining (paper sec. 5.2);
        rewards in ``batch`` are ignored if present (`PretrainingLearner.pretrain_update`)."""
        if self.config.critic_objective == "td_infonce":
            raise ValueError(
                "critic_objective='td_infonce' cannot pretrain reward-free: its bootstrap "
                "needs the policy, which only finetuning trains"
            )
        return self.run_stages(self.critic_stages(), batch)


class CVLMCLearner(CVLLearner):
    """CVL with the direct Monte-Carlo Q_NCE of eq. 11 (no random features) by default."""

    name = "cvl_mc"
    config_cls = CVLMCConfig
