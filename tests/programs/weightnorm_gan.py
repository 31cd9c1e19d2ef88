"""A small GAN in the style of PyTorch's GAN tutorials, with weight normalisation: the
generator's layers use `nn.utils.parametrizations.weight_norm`, the discriminator's the older
`nn.utils.weight_norm` hook. It learns a ring of 8 Gaussians in the plane. Weights, data and
noise come from NumPy's seeded generator (the custom init a tutorial writes), so a run is the
same numbers on PyTorch and on jitorch. The only change to run it on jitorch is the import line.
"""
import argparse
import warnings

import numpy as np

import jitorch as torch
import jitorch.nn as nn
from jitorch.nn.utils import parametrizations


def ring(n, rng):
    angles = rng.randint(0, 8, size=n) * (2 * np.pi / 8)
    pts = np.stack([np.cos(angles), np.sin(angles)], 1) * 2.0
    return (pts + rng.randn(n, 2) * 0.05).astype(np.float32)


def init_from(module, rng):
    # custom weights initialization (as the DCGAN example's weights_init), from NumPy
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * 0.3))


class Generator(nn.Module):
    def __init__(self, nz, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(nz, hidden), nn.LeakyReLU(0.2),
                                 nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                                 nn.Linear(hidden, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2),
                                 nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).view(-1)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=40)
    parser.add_argument('--batch', type=int, default=64)
    parser.add_argument('--nz', type=int, default=4)
    parser.add_argument('--hidden', type=int, default=32)
    parser.add_argument('--lr', type=float, default=2e-3)
    opt = parser.parse_args(argv)
    rng = np.random.RandomState(0)

    netG, netD = Generator(opt.nz, opt.hidden), Discriminator(opt.hidden)
    init_from(netG, rng)
    init_from(netD, rng)
    for layer in netG.net:
        if isinstance(layer, nn.Linear):
            parametrizations.weight_norm(layer)
    with warnings.catch_warnings():  # the hook form is deprecated in PyTorch 2.x
        warnings.simplefilter("ignore", FutureWarning)
        for layer in netD.net:
            if isinstance(layer, nn.Linear):
                nn.utils.weight_norm(layer)

    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=opt.lr, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=opt.lr, betas=(0.5, 0.999))
    history = []
    for step in range(opt.steps):
        real = torch.tensor(ring(opt.batch, rng))
        noise = torch.tensor(rng.randn(opt.batch, opt.nz).astype(np.float32))
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        fake = netG(noise)
        errD = criterion(netD(real), torch.ones(opt.batch)) + \
            criterion(netD(fake.detach()), torch.zeros(opt.batch))
        errD.backward()
        optD.step()
        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        errG = criterion(netD(fake), torch.ones(opt.batch))
        errG.backward()
        optG.step()
        history.append([errD.item(), errG.item()])
    with torch.no_grad():
        sample = netG(torch.tensor(rng.randn(256, opt.nz).astype(np.float32)))
        radius = sample.norm(dim=1).mean().item()
    return {"history": history, "radius": radius,
            "keys": sorted(netG.state_dict())[:3] + sorted(netD.state_dict())[:3]}


if __name__ == '__main__':
    out = main()
    print(f"final Loss_D {out['history'][-1][0]:.4f} Loss_G {out['history'][-1][1]:.4f} "
          f"mean radius {out['radius']:.3f}")
