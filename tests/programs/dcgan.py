"""PyTorch's examples/dcgan (Generator, Discriminator, weights_init, the training loop), as its
users write it, at 16x16 with small widths, on generated images (bright disks at random places)
instead of a dataset download. The only change to run it on jitorch is the import line."""
import argparse
import random

import jitorch as torch
import jitorch.nn as nn
import jitorch.optim as optim
import jitorch.utils.data


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, nc, ndf):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def make_images(n, generator):
    """Disks of radius 3-5 at random centres, in [-1, 1] like the Normalize'd datasets."""
    yy, xx = torch.meshgrid(torch.arange(16.), torch.arange(16.), indexing="ij")
    centres = 4 + 8 * torch.rand(n, 2, generator=generator)
    radii = 3 + 2 * torch.rand(n, generator=generator)
    d2 = (yy - centres[:, 0, None, None]) ** 2 + (xx - centres[:, 1, None, None]) ** 2
    images = (d2 < radii[:, None, None] ** 2).float() * 2 - 1
    return images.unsqueeze(1), torch.zeros(n)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--batchSize', type=int, default=32)
    parser.add_argument('--nz', type=int, default=8)
    parser.add_argument('--ngf', type=int, default=8)
    parser.add_argument('--ndf', type=int, default=8)
    parser.add_argument('--niter', type=int, default=2)
    parser.add_argument('--lr', type=float, default=0.0002)
    parser.add_argument('--beta1', type=float, default=0.5)
    parser.add_argument('--cuda', action='store_true', default=False)
    parser.add_argument('--manualSeed', type=int, default=999)
    opt = parser.parse_args(argv)

    random.seed(opt.manualSeed)
    torch.manual_seed(opt.manualSeed)

    g = torch.Generator().manual_seed(0)
    dataset = torch.utils.data.TensorDataset(*make_images(256, g))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)

    device = torch.device("cuda:0" if opt.cuda else "cpu")
    nz, ngf, ndf, nc = opt.nz, opt.ngf, opt.ndf, 1

    netG = Generator(nz, ngf, nc).to(device)
    netG.apply(weights_init)
    netD = Discriminator(nc, ndf).to(device)
    netD.apply(weights_init)

    criterion = nn.BCELoss()

    fixed_noise = torch.randn(opt.batchSize, nz, 1, 1, device=device)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    history = []
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label,
                               dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.randn(batch_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
                  % (epoch, opt.niter, i, len(dataloader),
                     errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
            history.append((errD.item(), errG.item(), D_x, D_G_z1))
    with torch.no_grad():
        fake = netG(fixed_noise)
    return history, fake


if __name__ == '__main__':
    main()
