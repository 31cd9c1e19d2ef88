"""PyTorch's examples/vae, as its users write it, on generated 8x8 binary "images" (one of four
stripe patterns with flipped pixels) instead of MNIST. The only change to run it on jitorch is
the import line."""
import argparse

import jitorch as torch
import jitorch.utils.data
from jitorch import nn, optim
from jitorch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def make_images(n, generator):
    kind = torch.randint(0, 4, (n,), generator=generator)
    grid = torch.arange(8)
    rows, cols = grid.view(8, 1).expand(8, 8), grid.view(1, 8).expand(8, 8)
    patterns = torch.stack([(rows % 2 == 0), (cols % 2 == 0), (rows < 4), (cols >= 4)]).float()
    images = patterns[kind]
    flip = torch.rand(n, 8, 8, generator=generator) < 0.05
    images = torch.where(flip, 1 - images, images)
    return images.view(n, 1, 8, 8), kind


def main(argv=None):
    parser = argparse.ArgumentParser(description='VAE MNIST Example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--epochs', type=int, default=4, metavar='N')
    parser.add_argument('--no-cuda', action='store_true', default=False)
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    args = parser.parse_args(argv)
    args.cuda = not args.no_cuda and torch.cuda.is_available()

    torch.manual_seed(args.seed)

    device = torch.device("cuda" if args.cuda else "cpu")

    kwargs = {'num_workers': 1, 'pin_memory': True} if args.cuda else {}
    g = torch.Generator().manual_seed(0)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*make_images(512, g)),
        batch_size=args.batch_size, shuffle=True, **kwargs)
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*make_images(128, g)),
        batch_size=args.batch_size, shuffle=False, **kwargs)

    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)

    def train(epoch):
        model.train()
        train_loss = 0
        for batch_idx, (data, _) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100. * batch_idx / len(train_loader),
                    loss.item() / len(data)))

        print('====> Epoch: {} Average loss: {:.4f}'.format(
              epoch, train_loss / len(train_loader.dataset)))

    def test(epoch):
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for i, (data, _) in enumerate(test_loader):
                data = data.to(device)
                recon_batch, mu, logvar = model(data)
                test_loss += loss_function(recon_batch, data, mu, logvar).item()

        test_loss /= len(test_loader.dataset)
        print('====> Test set loss: {:.4f}'.format(test_loss))
        return test_loss

    losses = [test(0)]
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        losses.append(test(epoch))
        with torch.no_grad():
            sample = torch.randn(16, 4).to(device)
            sample = model.decode(sample).cpu()
            assert sample.view(16, 1, 8, 8).shape == (16, 1, 8, 8)
    return losses


if __name__ == "__main__":
    main()
