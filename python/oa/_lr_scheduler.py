"""torch.optim.lr_scheduler over oa's optimizers (oa.optim.lr_scheduler): each step() sets the learning rate of the
optimizer's one param group, as torch's schedulers set param_groups[i]['lr']."""
import bisect
import math

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "ReduceLROnPlateau", "StepLR"]


class LRScheduler:
    """torch.optim.lr_scheduler.LRScheduler: a subclass gives the rate of epoch `last_epoch` from the base rate in
    _rate(base_lr). Construction records the group's 'initial_lr' (last_epoch=-1) and steps once to epoch 0, as
    torch; step() advances an epoch and sets the optimizer's rate; get_last_lr() is [that rate]."""

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        group = optimizer.param_groups[0]
        if last_epoch == -1:
            group.setdefault("initial_lr", group["lr"])
        elif "initial_lr" not in group:
            raise KeyError("param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer")
        self.base_lrs = [group["initial_lr"]]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self):
        return [self._rate(base) for base in self.base_lrs]

    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._last_lr = self.get_lr()
        self.optimizer.param_groups[0]["lr"] = self._last_lr[0]

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        """The scheduler's state without the optimizer (and without functions, as torch's LambdaLR)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer" and not callable(value)}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """torch.optim.lr_scheduler.LambdaLR: base_lr * lr_lambda(epoch) (a function, or a list of one)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambda = lr_lambda[0] if isinstance(lr_lambda, (list, tuple)) else lr_lambda
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        return base * self.lr_lambda(self.last_epoch)


class StepLR(LRScheduler):
    """torch.optim.lr_scheduler.StepLR: base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        return base * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """torch.optim.lr_scheduler.MultiStepLR: base_lr * gamma ** (the number of milestones <= epoch)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        return base * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch)


class ExponentialLR(LRScheduler):
    """torch.optim.lr_scheduler.ExponentialLR: base_lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        return base * self.gamma ** self.last_epoch


class CosineAnnealingLR(LRScheduler):
    """torch.optim.lr_scheduler.CosineAnnealingLR: eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class LinearLR(LRScheduler):
    """torch.optim.lr_scheduler.LinearLR: base_lr times a factor going linearly from start_factor to end_factor
    over total_iters epochs, then end_factor. Errors: ValueError for factors outside torch's ranges."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1, "
                             "and the ending one between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _rate(self, base):
        done = min(self.last_epoch, self.total_iters) / self.total_iters
        return base * (self.start_factor + (self.end_factor - self.start_factor) * done)


class ReduceLROnPlateau:
    """torch.optim.lr_scheduler.ReduceLROnPlateau: step(metric) multiplies the rate by factor (down to min_lr,
    changes smaller than eps ignored) once the metric has not improved for more than patience epochs (mode 'min'
    or 'max'; an improvement beats the best by threshold, relative ('rel') or absolute ('abs')), then waits
    cooldown epochs. A metric tensor is read back (a synchronization)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0.0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"mode {mode!r} must be 'min' or 'max' and threshold_mode {threshold_mode!r} 'rel' or "
                             "'abs'")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.min_lr, self.eps = (threshold, threshold_mode,
                                                                                     cooldown, min_lr, eps)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = self.last_epoch = 0
        self._last_lr = [optimizer.param_groups[0]["lr"]]

    def _better(self, value):
        if self.threshold_mode == "rel":
            scale = 1 - self.threshold if self.mode == "min" else 1 + self.threshold
            return value < self.best * scale if self.mode == "min" else value > self.best * scale
        return value < self.best - self.threshold if self.mode == "min" else value > self.best + self.threshold

    def step(self, metrics):
        value = float(metrics)
        self.last_epoch += 1
        if self._better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            group = self.optimizer.param_groups[0]
            new = max(group["lr"] * self.factor, self.min_lr)
            if group["lr"] - new > self.eps:
                group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [self.optimizer.param_groups[0]["lr"]]

    def get_last_lr(self):
        return list(self._last_lr)

    state_dict = LRScheduler.state_dict
    load_state_dict = LRScheduler.load_state_dict
