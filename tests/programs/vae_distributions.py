"""A variational autoencoder written with torch.distributions, as PyTorch users write the VAE
tutorial's model with them: the encoder gives a `Normal` posterior whose `rsample()` carries
gradients to its parameters, the decoder a `Bernoulli` likelihood over pixels (`Independent`
makes the 64 pixels one event), and the KL term is `kl_divergence(q, prior)`. Data: generated
8x8 binary "images" (four stripe patterns with flipped pixels). The only change to run it on
jitorch is the import line."""
import argparse

import jitorch as torch
from jitorch import nn, optim
from jitorch.distributions import Bernoulli, Independent, Normal, kl_divergence


class VAE(nn.Module):
    def __init__(self, latent=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.mu = nn.Linear(32, latent)
        self.log_sigma = nn.Linear(32, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 32), nn.ReLU(), nn.Linear(32, 64))
        self.latent = latent

    def posterior(self, x):
        h = self.enc(x)
        return Independent(Normal(self.mu(h), self.log_sigma(h).exp()), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.dec(z)), 1)

    def prior(self, batch):
        return Independent(Normal(torch.zeros(batch, self.latent), torch.ones(batch,
                                                                               self.latent)), 1)

    def forward(self, x):
        q = self.posterior(x)
        z = q.rsample()  # reparameterised: gradients flow to mu and sigma
        recon = self.likelihood(z).log_prob(x)
        kl = kl_divergence(q, self.prior(x.shape[0]))
        return -(recon - kl).mean()  # the negative ELBO per image


def make_images(n, generator):
    kind = torch.randint(0, 4, (n,), generator=generator)
    grid = torch.arange(8)
    rows, cols = grid.view(8, 1).expand(8, 8), grid.view(1, 8).expand(8, 8)
    patterns = torch.stack([(rows % 2 == 0), (cols % 2 == 0), (rows < 4), (cols >= 4)]).float()
    images = patterns[kind]
    flip = torch.rand(n, 8, 8, generator=generator) < 0.05
    return torch.where(flip, 1 - images, images).view(n, 64)


def main(argv=None):
    parser = argparse.ArgumentParser(description="VAE with torch.distributions")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    data = make_images(256, torch.Generator().manual_seed(0))
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for i in range(0, len(data), args.batch_size):
            x = data[i:i + args.batch_size]
            optimizer.zero_grad()
            loss = model(x)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(x)
        losses.append(total / len(data))
        print(f"====> Epoch: {epoch} Average negative ELBO: {losses[-1]:.4f}")
    with torch.no_grad():
        samples = model.likelihood(model.prior(16).sample()).mean
    assert samples.shape == (16, 64)
    return losses


if __name__ == "__main__":
    main()
